package fabricjson

import "github.com/ibfabric/ibdiag/internal/jsonschema"

// validator checks a decoded JSON value against docs/fabric.schema.json
// (internal/jsonschema does the work).
type validator struct {
	root map[string]any
}

func (v *validator) validate(s map[string]any, x any, path string) error {
	return jsonschema.FromMap(v.root).ValidateAt(s, x, path)
}
