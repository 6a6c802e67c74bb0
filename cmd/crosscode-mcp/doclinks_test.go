package main

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/mddoc"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// ownDistribution are the only pages outside the repository that its
// documents may link to: where the project's own releases are published.
// Everything else a reader needs is in the repository, and a link to
// anything else (another project's docs, a specification kept elsewhere)
// would leave readers of a clone or an archive with a dead end.
var ownDistribution = []string{
	"https://github.com/crosscode/crosscode-mcp/releases",
	"https://www.npmjs.com/package/crosscode-mcp",
}

// publishedElsewhere are the documents read outside the repository (the
// npm packages' READMEs, on npmjs.com), where relative links do not work:
// they may link to the project's own pages instead.
var publishedElsewhere = regexp.MustCompile(`^npm/`)

var ownPages = regexp.MustCompile(`^https://(github\.com/crosscode/crosscode-mcp([/#?].*)?|www\.npmjs\.com/package/(crosscode-mcp|@crosscode/[a-z0-9-]+))$`)

var hasScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// TestDocLinks checks every link of the repository's Markdown documents:
// a relative link names a file or folder of the repository (one git
// tracks, so a clone has it) and, with a #fragment into a Markdown file,
// one of its headings; no link leaves the repository, but for the
// project's own releases page and npm package.
func TestDocLinks(t *testing.T) {
	sysdeps.SkipUnderWine(t, "it lists the repository's files with git, a Linux program Wine cannot start")
	root := filepath.Join("..", "..")
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	tracked := map[string]bool{} // files and the folders above them
	var docs []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		tracked[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			tracked[d] = true
		}
		// third_party/ holds other projects' files as they wrote them.
		if strings.HasSuffix(f, ".md") && !strings.HasPrefix(f, "third_party/") || f == "third_party/README.md" {
			docs = append(docs, f)
		}
	}
	// The documents being written in this change count too (a new guide
	// is linked before it is committed).
	for _, f := range docFiles(t) {
		tracked[f] = true
		if !slices.Contains(docs, f) {
			docs = append(docs, f)
		}
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(doc string) map[string]bool {
		if a, ok := anchors[doc]; ok {
			return a
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		anchors[doc] = mddoc.Anchors(string(b))
		return anchors[doc]
	}
	links := 0
	for _, doc := range docs {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range mddoc.Links(string(b)) {
			links++
			where := doc + ":" + strconv.Itoa(l.Line)
			target := l.Target
			if hasScheme.MatchString(target) {
				switch {
				case publishedElsewhere.MatchString(doc):
					if !ownPages.MatchString(target) {
						t.Errorf("%s: %s leaves the project: a published README links to the project's own pages only", where, target)
					}
				case !ownRelease(target):
					t.Errorf("%s: %s leaves the repository: link to a file of the repository instead (only %v may be linked)", where, target, ownDistribution)
				}
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			file, _, _ = strings.Cut(file, "?")
			if strings.HasPrefix(file, "/") {
				t.Errorf("%s: %s: write links relative to the document", where, target)
				continue
			}
			dest := doc
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(doc), file))
			}
			switch {
			case dest == ".." || strings.HasPrefix(dest, "../"):
				t.Errorf("%s: %s leaves the repository", where, target)
				continue
			case dest != "." && !tracked[dest]:
				t.Errorf("%s: %s: no file or folder %s in the repository", where, target, dest)
				continue
			}
			if frag != "" {
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: %s: a fragment into %s, which has no headings to point to", where, target, dest)
				} else if !anchorsOf(dest)[frag] {
					t.Errorf("%s: %s: %s has no heading #%s", where, target, dest, frag)
				}
			}
		}
	}
	// The README is the front page: it links every guide.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	fromReadme := map[string]bool{}
	for _, l := range mddoc.Links(string(readme)) {
		file, _, _ := strings.Cut(l.Target, "#")
		fromReadme[path.Clean(file)] = true
	}
	for _, f := range docFiles(t) {
		if f != "README.md" && !fromReadme[f] {
			t.Errorf("README.md does not link %s: add it to the front page (Read more)", f)
		}
	}
	if links < 100 {
		t.Fatalf("found %d links in %d documents; the extraction is broken", links, len(docs))
	}
}

func ownRelease(url string) bool {
	for _, p := range ownDistribution {
		if url == p || strings.HasPrefix(url, p+"/") {
			return true
		}
	}
	return false
}
