package testing_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestLayering holds the house's floors (see docs/code-layout.md):
// nothing below the MCP server imports it (the hooks included), and no
// package that ships imports test support (internal/testing/...), so the
// tree shows what ships.
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command: ", err)
	}
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports", "github.com/crosscode/crosscode-mcp/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/crosscode/crosscode-mcp/"
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		rel := strings.TrimPrefix(p.ImportPath, mod)
		testSupport := strings.HasPrefix(rel, "internal/testing/")
		for _, imp := range p.Imports {
			irel, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			if strings.HasPrefix(rel, "bridge/") && irel == "mcp" {
				t.Errorf("%s imports mcp: nothing below the MCP server may (identity and the workspace's location are in internal/identity)", rel)
			}
			if !testSupport && strings.HasPrefix(irel, "internal/testing/") {
				t.Errorf("%s ships but imports the test support package %s", rel, irel)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list listed %d packages; want the whole module", seen)
	}
}
