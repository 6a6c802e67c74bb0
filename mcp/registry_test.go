package mcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/tools"
)

// registry is every tool, as tools/list shows them.
func registry() []tools.Tool { return Registry(nil, nil, nil, Toolsets) }

// TestRegistry checks what every tool must have: a unique snake_case name,
// a description, a title, all three behaviour hints, a strict input schema
// and an output schema.
func TestRegistry(t *testing.T) {
	list := registry()
	if len(list) != 24 {
		t.Fatalf("%d tools", len(list))
	}
	seen := map[string]bool{}
	for _, tl := range list {
		d := tl.Def
		if seen[d.Name] {
			t.Errorf("duplicate tool %q", d.Name)
		}
		seen[d.Name] = true
		if strings.ToLower(d.Name) != d.Name || strings.ContainsAny(d.Name, " -") {
			t.Errorf("%s: names are snake_case", d.Name)
		}
		if len(d.Description) < 40 || d.Annotations.Title == "" {
			t.Errorf("%s: needs a description and a title", d.Name)
		}
		a := d.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil {
			t.Errorf("%s: every behaviour hint must be stated", d.Name)
		}
		if *a.ReadOnlyHint && *a.DestructiveHint {
			t.Errorf("%s: read-only and destructive", d.Name)
		}
		var in map[string]any
		if err := json.Unmarshal(d.RawInputSchema, &in); err != nil || in["type"] != "object" || in["additionalProperties"] != false {
			t.Errorf("%s: input schema must be a strict object: %s", d.Name, d.RawInputSchema)
		}
		var out map[string]any
		if err := json.Unmarshal(d.RawOutputSchema, &out); err != nil || out["type"] != "object" {
			t.Errorf("%s: needs an output schema: %s", d.Name, d.RawOutputSchema)
		}
		if tl.Toolset == "coord" {
			if props, _ := out["properties"].(map[string]any); props["news"] == nil {
				t.Errorf("%s: coordination results carry news", d.Name)
			}
		}
	}
	for _, want := range []string{"workspace_status", "publish_intent", "claim", "release_claim", "check_conflicts", "request_handoff",
		"respond_handoff", "create_task", "update_task", "list_tasks", "record_validation", "share_changes", "read_feed",
		"capture_status", "list_scenarios", "run_scenario", "start_recording", "stop_recording", "replay", "cancel_capture", "get_capture", "list_captures",
		"step_game", "inspect_game"} {
		if !seen[want] {
			t.Errorf("missing tool %s", want)
		}
	}
}

// TestToolListSize keeps tools/list small: it is read into every agent's
// context. 28 KiB: 24 tools (the agent-play pair, step_game and
// inspect_game, took it from 24 to 27 KiB).
func TestToolListSize(t *testing.T) {
	var defs []any
	for _, tl := range registry() {
		defs = append(defs, tl.Def)
	}
	b, err := json.Marshal(map[string]any{"tools": defs})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 28<<10 {
		t.Fatalf("tools/list is %d bytes, over 28 KiB", len(b))
	}
	t.Logf("tools/list: %d bytes for %d tools", len(b), len(defs))
}

// TestToolSnapshots compares every tool's definition with its snapshot in
// tools/__toolsnaps__. Regenerate with UPDATE_TOOLSNAPS=true go test ./mcp.
func TestToolSnapshots(t *testing.T) {
	dir := filepath.Join("..", "tools", "__toolsnaps__")
	update := os.Getenv("UPDATE_TOOLSNAPS") == "true"
	want := map[string]bool{}
	for _, tl := range registry() {
		name := tl.Def.Name + ".snap"
		want[name] = true
		// The snapshot holds the schemas reflected from the tool's types,
		// not the generated ones the binary carries (TestGeneratedSchemas
		// holds those equal), so one UPDATE run renews both.
		def := tl.Def
		def.RawInputSchema, def.RawOutputSchema = tl.Reflect()
		b, err := json.MarshalIndent(def, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join(dir, name)
		if update {
			os.MkdirAll(dir, 0o755)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s changed; if intended, run UPDATE_TOOLSNAPS=true go test ./mcp", path)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s belongs to no tool; delete it", f)
		}
	}
}

const tableBegin, tableEnd = "<!-- tools:begin -->\n", "<!-- tools:end -->"

// TestReadmeToolTable checks the README's tool table is the one the
// registry generates. Regenerate with UPDATE_README=true go test ./mcp.
func TestReadmeToolTable(t *testing.T) {
	path := filepath.Join("..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", tableBegin, tableEnd)
	}
	table := tools.MarkdownTable(registry())
	if s[i+len(tableBegin):j] == table {
		return
	}
	if os.Getenv("UPDATE_README") == "true" {
		if err := os.WriteFile(path, []byte(s[:i+len(tableBegin)]+table+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("README.md's tool table is stale; run UPDATE_README=true go test ./mcp")
}
