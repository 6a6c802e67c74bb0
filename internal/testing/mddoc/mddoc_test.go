package mddoc

import (
	"reflect"
	"testing"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Scale out: PostgreSQL and several instances": "scale-out-postgresql-and-several-instances",
		"What the agent sees":                         "what-the-agent-sees",
		"Presentation: timeScale and camera":          "presentation-timescale-and-camera",
		"Liveness: ping and pong":                     "liveness-ping-and-pong",
		"The `frames` section, in [Go](go.md)":        "the-frames-section-in-go",
		"Claude Code 2.1 (tested)":                    "claude-code-21-tested",
		"snake_case **bold**":                         "snake_case-bold",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

const doc = "# Title\n\nSee [a](docs/a.md#x) and ![pic](docs/p.png), `[not](code.md)`,\n" +
	"https://example.com/x. and <https://example.org>.\n\n```sh\ncrosscode-mcp demo\n[no](link.md)\n```\n\n" +
	"## Title\n\n[ref]: other.md\n<a href=\"h.md\">h</a>\n\n~~~json extra\n{}\n~~~\n"

func TestBlocksLinksAnchors(t *testing.T) {
	bs := Blocks(doc)
	if len(bs) != 2 || bs[0].Lang != "sh" || bs[0].Text != "crosscode-mcp demo\n[no](link.md)\n" || bs[0].Line != 6 ||
		bs[1].Lang != "json" || bs[1].Info != "json extra" || bs[1].Text != "{}\n" {
		t.Fatalf("Blocks: %+v", bs)
	}
	var got []string
	for _, l := range Links(doc) {
		got = append(got, l.Target)
	}
	want := []string{"docs/a.md#x", "docs/p.png", "https://example.org", "https://example.com/x", "other.md", "h.md"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Links = %q, want %q", got, want)
	}
	a := Anchors(doc)
	if !a["title"] || !a["title-1"] || len(a) != 2 {
		t.Fatalf("Anchors = %v", a)
	}
}
