package protocol

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// TestSchemasUpToDate fails when protocol/schema differs from what the Go
// types generate. Regenerate with: UPDATE_SCHEMAS=1 go test ./protocol -run TestSchemasUpToDate
func TestSchemasUpToDate(t *testing.T) {
	update := os.Getenv("UPDATE_SCHEMAS") != ""
	want := map[string]bool{}
	for name, s := range Schemas() {
		want[name] = true
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join("schema", name)
		if update {
			if err := os.MkdirAll("schema", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s is stale; run: UPDATE_SCHEMAS=1 go test ./protocol -run TestSchemasUpToDate", path)
		}
	}
	files, _ := filepath.Glob(filepath.Join("schema", "*.json"))
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s is not generated any more; delete it", f)
		}
	}
}

// compiled compiles the committed schemas with an independent validator.
func compiled(t *testing.T) map[string]*validator.Schema {
	t.Helper()
	c := validator.NewCompiler()
	c.AssertFormat()
	names := []string{}
	for name, s := range Schemas() {
		b, _ := json.Marshal(s)
		doc, err := validator.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(SchemaBaseURL+name, doc); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	out := map[string]*validator.Schema{}
	for _, name := range names {
		s, err := c.Compile(SchemaBaseURL + name)
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		out[name] = s
	}
	return out
}

func validate(t *testing.T, s *validator.Schema, doc []byte) error {
	t.Helper()
	v, err := validator.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// TestSchemasAcceptExamplesAndRejectBadOnes checks the generated schemas
// against the spec's examples with an independent JSON Schema validator.
func TestSchemasAcceptExamplesAndRejectBadOnes(t *testing.T) {
	s := compiled(t)
	for name := range envelopeExamples {
		if err := validate(t, s["envelope.json"], readExample(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for file, schema := range map[string]string{
		"ingest-request.json":    "ingest-request.json",
		"ingest-receipt.json":    "ingest-receipt.json",
		"events-page-v2.json":    "page.json",
		"cursor-too-old-v2.json": "cursor-too-old.json",
		"fanout-claim.json":      "fanout.json",
	} {
		if err := validate(t, s[schema], readExample(t, file)); err != nil {
			t.Errorf("%s against %s: %v", file, schema, err)
		}
	}
	bad := map[string][]byte{
		"unknown field":           mutate(t, "claim-created.json", func(m map[string]any) { m["colour"] = 1 }),
		"schemaVersion 2":         mutate(t, "claim-created.json", func(m map[string]any) { m["schemaVersion"] = 2 }),
		"payload of other type":   mutate(t, "claim-created.json", func(m map[string]any) { m["type"] = "task.created" }),
		"unknown payload field":   mutate(t, "claim-created.json", func(m map[string]any) { payload(m)["colour"] = 1 }),
		"bad enum":                mutate(t, "task-created.json", func(m map[string]any) { payload(m)["status"] = "wip" }),
		"bad time":                mutate(t, "task-created.json", func(m map[string]any) { m["createdAt"] = "noon" }),
		"negative clientSequence": mutate(t, "task-created.json", func(m map[string]any) { m["clientSequence"] = -3 }),
	}
	for name, doc := range bad {
		if err := validate(t, s["envelope.json"], doc); err == nil {
			t.Errorf("schema accepted %s", name)
		}
	}
}
