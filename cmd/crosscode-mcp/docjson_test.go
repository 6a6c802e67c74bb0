package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/hooks"
	"github.com/crosscode/crosscode-mcp/internal/testing/mddoc"
)

// TestDocJSON checks the JSON the README and the guides show: every json
// block is JSON, every capture config (.crosscode/capture.json) loads as
// the server loads it, strictly, and every hooks policy
// (.crosscode/hooks.json) as the hook does. (The protocol pages' messages
// are decoded by the protocol package's tests.)
func TestDocJSON(t *testing.T) {
	configs, policies := 0, 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, blk := range mddoc.Blocks(string(b)) {
			if blk.Lang != "json" && blk.Lang != "jsonc" {
				continue
			}
			text := blk.Text
			if blk.Lang == "jsonc" {
				var lines []string
				for _, l := range strings.Split(text, "\n") {
					if !strings.HasPrefix(strings.TrimSpace(l), "//") {
						lines = append(lines, l)
					}
				}
				text = strings.Join(lines, "\n")
			}
			where := f + ":" + strconv.Itoa(blk.Line)
			dec := json.NewDecoder(strings.NewReader(text))
			for {
				var raw json.RawMessage
				err := dec.Decode(&raw)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Errorf("%s: not JSON: %v", where, err)
					break
				}
				switch keys := topKeys(raw); {
				case slices.Contains(keys, "type"):
					// A protocol message (a hello names its game too).
				case overlaps(keys, "game", "listen", "requiredCapabilities", "presets", "allowedOrigins"),
					len(keys) == 1 && keys[0] == "frames": // a tool's result has frames too, among others
					configs++
					p := filepath.Join(t.TempDir(), "capture.json")
					if err := os.WriteFile(p, raw, 0o600); err != nil {
						t.Fatal(err)
					}
					if _, err := cappy.LoadConfig(p, false); err != nil {
						t.Errorf("%s: the server would refuse this capture config: %v", where, err)
					}
				case overlaps(keys, "policy", "claimTTL", "denyShared"):
					policies++
					top := t.TempDir()
					if err := os.MkdirAll(filepath.Join(top, ".crosscode"), 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(top, filepath.FromSlash(hooks.PolicyFile)), raw, 0o600); err != nil {
						t.Fatal(err)
					}
					if _, err := hooks.LoadPolicy(top, ""); err != nil {
						t.Errorf("%s: the hook would refuse this policy: %v", where, err)
					}
				}
			}
		}
	}
	if configs < 5 || policies < 1 {
		t.Fatalf("found %d capture configs and %d policies in the README and docs/; the extraction is broken", configs, policies)
	}
}

func topKeys(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// overlaps reports whether keys holds one of names: an example that
// names a field of a file is that file, and must hold nothing else.
func overlaps(keys []string, names ...string) bool {
	for _, k := range keys {
		if slices.Contains(names, k) {
			return true
		}
	}
	return false
}
