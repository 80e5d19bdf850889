package jsonschema

import (
	"encoding/json"
	"testing"
)

// TestAnyOfWithSiblings: anyOf is one constraint among the schema's
// keywords, not the whole schema: a document matching a branch must
// still meet the properties and additionalProperties beside it.
func TestAnyOfWithSiblings(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal([]byte(`{
		"type": "object",
		"additionalProperties": false,
		"properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
		"anyOf": [{"required": ["a"]}, {"required": ["b"]}]
	}`), &root); err != nil {
		t.Fatal(err)
	}
	s := FromMap(root)
	for doc, ok := range map[string]bool{
		`{"a": 1}`:           true,
		`{"b": "x"}`:         true,
		`{}`:                 false, // no branch
		`{"a": "1"}`:         false, // a branch, but a is not an integer
		`{"a": 1, "c": 2}`:   false, // a branch, but c is not allowed
		`{"a": 1, "b": "x"}`: true,
	} {
		if err := s.ValidateJSON([]byte(doc)); (err == nil) != ok {
			t.Errorf("%s: %v, want valid %v", doc, err, ok)
		}
	}
}
