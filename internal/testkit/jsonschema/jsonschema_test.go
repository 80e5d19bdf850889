package jsonschema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const testSchema = `{
  "type": "object", "additionalProperties": false, "required": ["a", "p"],
  "properties": {
    "a": {"type": "integer", "minimum": 0, "maximum": 9},
    "s": {"type": "string", "pattern": "^x"},
    "e": {"enum": ["on", "off"]},
    "p": {"anyOf": [{"$ref": "#/$defs/port"}, {"type": "null"}]},
    "l": {"type": "array", "items": {"type": "number"}}
  },
  "$defs": {"port": {"type": "object", "required": ["n"], "properties": {"n": {"const": 1}}}}
}`

func TestValidate(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal([]byte(testSchema), &root); err != nil {
		t.Fatal(err)
	}
	s := FromMap(root)
	for _, tt := range []struct {
		doc  string
		fail string // "" if valid, else part of the error
	}{
		{`{"a": 3, "p": null}`, ""},
		{`{"a": 3, "s": "xy", "e": "on", "p": {"n": 1}, "l": [1, 2.5]}`, ""},
		{`{"a": 3.5, "p": null}`, "not of type"},
		{`{"a": 10, "p": null}`, "maximum"},
		{`{"a": 1}`, `missing required "p"`},
		{`{"a": 1, "p": null, "z": 1}`, `unexpected property "z"`},
		{`{"a": 1, "p": null, "s": "y"}`, "does not match"},
		{`{"a": 1, "p": null, "e": "maybe"}`, "not in"},
		{`{"a": 1, "p": {"n": 2}}`, "anyOf"},
		{`{"a": 1, "p": {"n": "1"}}`, "anyOf"}, // the string "1" is not the number 1
		{`{"a": 1, "p": null, "l": ["1"]}`, "$.l[0]"},
	} {
		err := s.ValidateJSON([]byte(tt.doc))
		switch {
		case tt.fail == "" && err != nil:
			t.Errorf("%s: %v", tt.doc, err)
		case tt.fail != "" && (err == nil || !strings.Contains(err.Error(), tt.fail)):
			t.Errorf("%s: error %v, want one with %q", tt.doc, err, tt.fail)
		}
	}
	// an unknown keyword is an error, not silently ignored
	if err := FromMap(map[string]any{"format": "date-time"}).ValidateJSON([]byte(`"x"`)); err == nil {
		t.Error("unknown keyword accepted")
	}
}

func TestFieldKinds(t *testing.T) {
	var x any
	json.Unmarshal([]byte(`{"a": 1, "b": [{"a": "x", "c": null}], "d": {"a": true}}`), &x)
	got := map[string]map[string]bool{}
	FieldKinds(x, got)
	want := map[string]map[string]bool{
		"a": {"number": true, "string": true, "boolean": true},
		"b": {"array": true},
		"d": {"object": true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
