package fabricjson

import (
	"bytes"
	"os"
	"testing"

	"github.com/ibfabric/ibdiag/internal/testkit/jsonschema"
)

// validator checks a decoded JSON value against docs/fabric.schema.json
// (internal/testkit/jsonschema does the work).
type validator struct {
	root map[string]any
}

func (v *validator) validate(s map[string]any, x any, path string) error {
	return jsonschema.FromMap(v.root).ValidateAt(s, x, path)
}

// TestExampleValidates: the documented example, docs/fabric.example.json,
// validates against docs/fabric.schema.json, and is what the code writes
// (the router.json golden of TestGoldenAndSchema, byte for byte), so the
// docs cannot drift from either.
func TestExampleValidates(t *testing.T) {
	b, err := os.ReadFile("../../docs/fabric.example.json")
	if err != nil {
		t.Fatal(err)
	}
	validate(t, b)
	g, err := os.ReadFile("testdata/router.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, g) {
		t.Error("docs/fabric.example.json differs from testdata/router.json (the code's output): copy the golden over it")
	}
}
