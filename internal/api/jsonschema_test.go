package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A second reading of every answer's body, by a validator nobody here wrote and that knows no
// OpenAPI: the document's schemas are converted to JSON Schema (draft 7) as
// @openapi-contrib/openapi-schema-to-json-schema converts them (nullable: true adds "null" to the
// type and to the enum; OpenAPI-only keywords go), and a body is checked against the result by
// santhosh-tekuri/jsonschema, formats asserted. A keyword the conversion does not know fails it,
// rather than being ignored: the document may say nothing a JSON Schema validator would skip.
// kin-openapi, which reads `nullable` leniently (it lets null through before any other keyword),
// once passed a null the document's own schema forbade; this validator would not have.

const schemaDocURL = "openapi.json"

var (
	jsonSchemasOnce sync.Once
	jsonSchemas     *jsonSchemaSet
	jsonSchemasErr  error
)

// jsonSchemaSet holds the strict document's schemas compiled as JSON Schema.
type jsonSchemaSet struct {
	c        *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[*openapi3.SchemaRef]*jsonschema.Schema
	inline   int
}

func strictJSONSchemas(t testing.TB) *jsonSchemaSet {
	t.Helper()
	jsonSchemasOnce.Do(func() { jsonSchemas, jsonSchemasErr = newJSONSchemaSet() })
	if jsonSchemasErr != nil {
		t.Fatalf("openapi.yaml as JSON Schema: %v", jsonSchemasErr)
	}
	return jsonSchemas
}

func newJSONSchemaSet() (*jsonSchemaSet, error) {
	doc, err := strictDocument()
	if err != nil {
		return nil, err
	}
	schemas := map[string]any{}
	for name, ref := range doc.Components.Schemas {
		s, err := convertSchemaRef(ref)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		schemas[name] = s
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	if err := c.AddResource(schemaDocURL, map[string]any{"components": map[string]any{"schemas": schemas}}); err != nil {
		return nil, err
	}
	return &jsonSchemaSet{c: c, compiled: map[*openapi3.SchemaRef]*jsonschema.Schema{}}, nil
}

// schema compiles (once) the JSON Schema of a response's body schema.
func (s *jsonSchemaSet) schema(ref *openapi3.SchemaRef) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.compiled[ref]; ok {
		return sch, nil
	}
	loc := ""
	if ref.Ref != "" {
		loc = schemaDocURL + ref.Ref
	} else {
		converted, err := convertSchemaRef(ref)
		if err != nil {
			return nil, err
		}
		s.inline++
		loc = fmt.Sprintf("inline-%d.json", s.inline)
		if err := s.c.AddResource(loc, converted); err != nil {
			return nil, err
		}
	}
	sch, err := s.c.Compile(loc)
	if err != nil {
		return nil, err
	}
	s.compiled[ref] = sch
	return sch, nil
}

// validateBody checks a JSON body against the JSON Schema of its response.
func (s *jsonSchemaSet) validateBody(ref *openapi3.SchemaRef, body []byte) error {
	sch, err := s.schema(ref)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// convertSchemaRef is the JSON Schema of an OpenAPI 3.0 schema (a reference stays one, made
// absolute within the converted document).
func convertSchemaRef(ref *openapi3.SchemaRef) (any, error) {
	b, err := json.Marshal(ref)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return convertSchema(v)
}

// The keywords a schema of the document may use, and what the conversion does with each.
var (
	// keptKeywords mean the same in JSON Schema draft 7.
	keptKeywords = []string{"type", "properties", "required", "items", "enum", "pattern", "minimum", "maximum",
		"minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "format", "description", "title", "default",
		"allOf", "anyOf", "oneOf", "not", "additionalProperties", "multipleOf"}
	// droppedKeywords are OpenAPI's own, as the converter drops them.
	droppedKeywords = []string{"nullable", "discriminator", "readOnly", "writeOnly", "xml", "externalDocs", "example", "deprecated"}
)

func convertSchema(v any) (any, error) {
	s, ok := v.(map[string]any)
	if !ok {
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("not a schema: %v", v)
	}
	if r, ok := s["$ref"].(string); ok {
		// An OpenAPI 3.0 $ref replaces its object: siblings are ignored, as draft 7 ignores them.
		if !strings.HasPrefix(r, "#/") {
			return nil, fmt.Errorf("reference %q outside the document", r)
		}
		return map[string]any{"$ref": schemaDocURL + r}, nil
	}
	out := map[string]any{}
	for k, val := range s {
		switch {
		case strings.HasPrefix(k, "x-") || slices.Contains(droppedKeywords, k):
			continue
		case !slices.Contains(keptKeywords, k):
			return nil, fmt.Errorf("keyword %q has no JSON Schema meaning here", k)
		}
		switch k {
		case "properties":
			props := map[string]any{}
			for name, p := range val.(map[string]any) {
				c, err := convertSchema(p)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				props[name] = c
			}
			val = props
		case "items", "not", "additionalProperties":
			c, err := convertSchema(val)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			val = c
		case "allOf", "anyOf", "oneOf":
			var list []any
			for i, e := range val.([]any) {
				c, err := convertSchema(e)
				if err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
				}
				list = append(list, c)
			}
			val = list
		}
		out[k] = val
	}
	if s["nullable"] == true {
		t, ok := out["type"].(string)
		if !ok {
			// OpenAPI 3.0.3: nullable adds null to the type of its own schema object only.
			return nil, fmt.Errorf("nullable without a type of its own")
		}
		out["type"] = []any{t, "null"}
		if enum, ok := out["enum"].([]any); ok && !slices.Contains(enum, nil) {
			out["enum"] = append(slices.Clone(enum), nil)
		}
	}
	return out, nil
}

// checkHeadersDeclared fails an answer that carries a header its response does not declare.
// Content-Type and Content-Length are the body's framing (described by the response's content),
// Date the server's own.
func checkHeadersDeclared(t testing.TB, req *http.Request, status int, declared openapi3.Headers, got http.Header) {
	t.Helper()
	for name := range got {
		switch name {
		case "Content-Type", "Content-Length", "Date":
			continue
		}
		found := false
		for d := range declared {
			if http.CanonicalHeaderKey(d) == name {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s %s -> %d: header %s is sent but not declared in openapi.yaml", req.Method, req.URL, status, name)
		}
	}
}

// An answer the conversion reads as the converter does: a nullable enum takes null, an object
// schema that is nullable takes null, and null is refused where the document does not allow it.
func TestJSONSchemaConversionOfNulls(t *testing.T) {
	s := strictJSONSchemas(t)
	doc, err := strictDocument()
	if err != nil {
		t.Fatal(err)
	}
	item := doc.Components.Schemas["DeploymentOrderLineItem"]
	sa := doc.Components.Schemas["ServiceAcceptance"]
	for _, c := range []struct {
		name   string
		schema *openapi3.SchemaRef
		body   string
		ok     bool
	}{
		{"acceptance, enums null", sa, `{"midId":null,"configured":false,"cardPlans":[],"ebtFcsNumber":null,"amexProgram":null,"amexEsaNumber":null,"ebtBenefitMode":null}`, true},
		{"acceptance, enum value", sa, `{"midId":null,"configured":true,"cardPlans":[],"ebtFcsNumber":null,"amexProgram":"esa","amexEsaNumber":null,"ebtBenefitMode":"both"}`, true},
		{"acceptance, unknown enum value", sa, `{"midId":null,"configured":true,"cardPlans":[],"ebtFcsNumber":null,"amexProgram":"gold","amexEsaNumber":null,"ebtBenefitMode":null}`, false},
		{"acceptance, null where not nullable", sa, `{"midId":null,"configured":null,"cardPlans":[],"ebtFcsNumber":null,"amexProgram":null,"amexEsaNumber":null,"ebtBenefitMode":null}`, false},
		{"acceptance, an added field", sa, `{"midId":null,"configured":false,"cardPlans":[],"ebtFcsNumber":null,"amexProgram":null,"amexEsaNumber":null,"ebtBenefitMode":null,"x":1}`, false},
		{"line item, embedded objects null", item, lineItemJSON(`null`), true},
		{"line item, inventory unit not an object", item, lineItemJSON(`"unit"`), false},
		{"line item, inventory unit incomplete", item, lineItemJSON(`{"id":"00000000-0000-4000-8000-000000000901"}`), false},
	} {
		err := s.validateBody(c.schema, []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s: valid %v, want %v: %v", c.name, err == nil, c.ok, err)
		}
	}
}

func lineItemJSON(inventoryUnit string) string {
	const id = `"00000000-0000-4000-8000-000000000101"`
	const at = `"2026-11-21T09:30:00Z"`
	return `{"id":` + id + `,"orderId":` + id + `,"orderType":"gateway","deploymentModelId":` + id +
		`,"connectionType":null,"status":"deployed","inventoryUnitId":null,"equipmentId":null,"varsheetId":null,` +
		`"createdAt":` + at + `,"createdBy":` + id + `,"updatedAt":` + at + `,"updatedBy":` + id +
		`,"inventoryUnit":` + inventoryUnit + `,"equipment":null,"varsheet":null,"shipment":null}`
}
