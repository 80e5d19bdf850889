package fabricjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// validator checks a decoded JSON value against the subset of JSON Schema
// (2020-12) that docs/fabric.schema.json uses: type, const, enum,
// properties, required, additionalProperties (false), items, pattern,
// minimum, maximum, anyOf and local $ref to #/$defs/. Any other keyword
// is an error, so the schema cannot silently use something unchecked.
type validator struct {
	root map[string]any
}

var known = map[string]bool{
	"$schema": true, "$id": true, "title": true, "description": true, "$defs": true,
	"type": true, "const": true, "enum": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "pattern": true, "minimum": true,
	"maximum": true, "anyOf": true, "$ref": true,
}

func (v *validator) validate(s map[string]any, x any, path string) error {
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
		var errs []string
		for _, sub := range branches {
			err := v.validate(sub.(map[string]any), x, path)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: matches no anyOf branch: %s", path, strings.Join(errs, "; "))
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
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
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

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
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
