// Package jsonschema validates JSON documents against the subset of JSON
// Schema (2020-12) that the schemas in docs/ use: type, const, enum,
// properties, required, additionalProperties (false), items, pattern,
// minimum, maximum, anyOf and local $ref to #/$defs/. Any other keyword
// is an error, so a schema cannot silently use something unchecked. It
// is for tests: the tools never validate what they print.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Schema is a parsed schema.
type Schema struct {
	root map[string]any
}

// FromMap wraps a schema already decoded from JSON.
func FromMap(root map[string]any) *Schema { return &Schema{root: root} }

// Load reads and parses a schema file.
func Load(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Schema{root: root}, nil
}

// Validate checks a decoded JSON value (as encoding/json decodes into
// any) against the schema; the error names the first path that fails.
func (v *Schema) Validate(x any) error { return v.validate(v.root, x, "$") }

// ValidateJSON decodes doc and validates it.
func (v *Schema) ValidateJSON(doc []byte) error {
	var x any
	if err := json.Unmarshal(doc, &x); err != nil {
		return err
	}
	return v.Validate(x)
}

// ValidateAt validates x against the sub-schema s of v, naming path in
// errors.
func (v *Schema) ValidateAt(s map[string]any, x any, path string) error {
	return v.validate(s, x, path)
}

var known = map[string]bool{
	"$schema": true, "$id": true, "title": true, "description": true, "$defs": true,
	"type": true, "const": true, "enum": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "pattern": true, "minimum": true,
	"maximum": true, "anyOf": true, "$ref": true,
}

func (v *Schema) validate(s map[string]any, x any, path string) error {
	for k := range s {
		if !known[k] {
			return fmt.Errorf("%s: schema keyword %q not supported by the test validator", path, k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return fmt.Errorf("%s: unsupported $ref %q", path, ref)
		}
		def, ok := v.root["$defs"].(map[string]any)[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: $ref %q not found", path, ref)
		}
		return v.validate(def, x, path)
	}
	if branches, ok := s["anyOf"].([]any); ok {
		// One branch must match; the schema's other keywords still apply.
		var errs []string
		for _, sub := range branches {
			err := v.validate(sub.(map[string]any), x, path)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, err.Error())
		}
		if errs != nil {
			return fmt.Errorf("%s: matches no anyOf branch: %s", path, strings.Join(errs, "; "))
		}
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, e := range t {
				types = append(types, e.(string))
			}
		}
		match := false
		for _, t := range types {
			if typeOf(x, t) {
				match = true
			}
		}
		if !match {
			return fmt.Errorf("%s: %v is not of type %v", path, x, types)
		}
	}
	if c, ok := s["const"]; ok && !equal(c, x) {
		return fmt.Errorf("%s: %v is not %v", path, x, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, c := range e {
			if equal(c, x) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v not in %v", path, x, e)
		}
	}
	switch x := x.(type) {
	case string:
		if p, ok := s["pattern"].(string); ok && !compiled(p).MatchString(x) {
			return fmt.Errorf("%s: %q does not match %s", path, x, p)
		}
	case float64:
		if m, ok := s["minimum"].(float64); ok && x < m {
			return fmt.Errorf("%s: %v < minimum %v", path, x, m)
		}
		if m, ok := s["maximum"].(float64); ok && x > m {
			return fmt.Errorf("%s: %v > maximum %v", path, x, m)
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := v.validate(items, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := x[r.(string)]; !ok {
					return fmt.Errorf("%s: missing required %q", path, r)
				}
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if ap, ok := s["additionalProperties"].(bool); ok && !ap {
					return fmt.Errorf("%s: unexpected property %q", path, k)
				}
				continue
			}
			if err := v.validate(ps, x[k], path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func typeOf(x any, t string) bool {
	switch t {
	case "null":
		return x == nil
	case "boolean":
		_, ok := x.(bool)
		return ok
	case "string":
		_, ok := x.(string)
		return ok
	case "number":
		_, ok := x.(float64)
		return ok
	case "integer":
		f, ok := x.(float64)
		return ok && f == math.Trunc(f)
	case "array":
		_, ok := x.([]any)
		return ok
	case "object":
		_, ok := x.(map[string]any)
		return ok
	}
	return false
}

// patterns holds the compiled "pattern"s: a document's strings are
// checked against a few patterns many times over.
var patterns sync.Map // string -> *regexp.Regexp

func compiled(p string) *regexp.Regexp {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	patterns.Store(p, re)
	return re
}

// equal reports whether a and b, decoded JSON values, are the same JSON
// value. Strings, the values const and enum mostly hold, compare as
// strings (decoded JSON strings are valid UTF-8: their encodings are
// equal exactly when they are); other values by their encodings.
func equal(a, b any) bool {
	if sa, ok := a.(string); ok {
		sb, ok := b.(string)
		return ok && sa == sb
	}
	if _, ok := b.(string); ok {
		return false // a is not a string
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// Kind is the JSON type of a decoded value: "string", "number",
// "boolean", "object", "array" or "null".
func Kind(x any) string {
	switch x.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "null"
}

// FieldKinds adds, for every object member anywhere in x, the JSON kind
// of its value to kinds[name] (null is not a kind: it means "none").
func FieldKinds(x any, kinds map[string]map[string]bool) {
	switch x := x.(type) {
	case map[string]any:
		for k, v := range x {
			if v != nil {
				if kinds[k] == nil {
					kinds[k] = map[string]bool{}
				}
				kinds[k][Kind(v)] = true
			}
			FieldKinds(v, kinds)
		}
	case []any:
		for _, v := range x {
			FieldKinds(v, kinds)
		}
	}
}
