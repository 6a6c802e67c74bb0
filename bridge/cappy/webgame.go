package cappy

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
)

// A web game's capture config resolved as the launcher runs it: its
// folders against the repository, the page it opens, the name the page
// driver gives it. NewService launches from it and doctor checks it, so
// the two never read a config two ways.

// Dir is where the game's command runs: game.cwd, relative to repo (the
// repository's root), or repo itself.
func (g *GameConfig) Dir(repo string) string {
	if g == nil || g.Cwd == "" {
		return repo
	}
	if filepath.IsAbs(g.Cwd) {
		return g.Cwd
	}
	return filepath.Join(repo, g.Cwd)
}

// WebGame is a web game as the launcher opens it.
type WebGame struct {
	// Dir is where game.command (a dev server) runs.
	Dir string
	// Serve is the folder served, absolute ("" when nothing is served).
	Serve string
	// URL is game.url as the config gives it (a path under Serve, or a
	// full URL).
	URL string
	// ID names the game in the page driver's hello: never empty.
	ID string
}

// ResolveWebGame resolves a web game's config (g.Web() is true) against
// repo, the repository's root: game.cwd against repo, game.serve against
// game.cwd, and the game's name.
func ResolveWebGame(g *GameConfig, repo string) *WebGame {
	w := &WebGame{Dir: g.Dir(repo), URL: g.URL}
	if g.Serve != "" {
		w.Serve = g.Serve
		if !filepath.IsAbs(w.Serve) {
			w.Serve = filepath.Join(w.Dir, w.Serve)
		}
		w.Serve = filepath.Clean(w.Serve)
	}
	w.ID = pageGameID(w.Serve, w.Dir, repo, g.URL)
	return w
}

// PageFile is the file under Serve that the page's URL names (its
// folder's index.html when it names a folder), as the static server
// answers it; "" when nothing is served or the URL is another server's.
func (w *WebGame) PageFile() string {
	if w.Serve == "" {
		return ""
	}
	u, err := url.Parse(w.URL)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return ""
	}
	p := path.Clean("/" + u.Path)
	file := filepath.Join(w.Serve, filepath.FromSlash(strings.TrimPrefix(p, "/")))
	if strings.HasSuffix(u.Path, "/") || u.Path == "" {
		return filepath.Join(file, "index.html")
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return filepath.Join(file, "index.html") // the server redirects to the folder's index
	}
	return file
}

// genericNames are folder and page names that say nothing of the game
// they hold: the page driver looks past them for the game's name.
var genericNames = map[string]bool{
	"": true, ".": true, "/": true, "dist": true, "build": true, "public": true, "www": true, "out": true, "output": true,
	"static": true, "web": true, "site": true, "html": true, "docs": true, "app": true, "client": true, "frontend": true,
	"src": true, "game": true, "release": true, "export": true, "bin": true, "index": true,
}

// maxGameIDRunes caps the game's name.
const maxGameIDRunes = 100

// pageGameID names a web game in the page driver's hello, never empty:
// the first name that says something of the game among the served folder
// (serve, absolute) and the folders above it up to the repository's root
// (repo), the page's name in its URL, and the game's folder (dir, where
// its dev server runs) and those above it up to the repository's root;
// else the repository's name whatever it is; else "web-game".
func pageGameID(serve, dir, repo, pageURL string) string {
	var candidates []string
	if serve != "" {
		candidates = append(candidates, foldersUp(serve, repo)...)
	}
	if u, err := url.Parse(pageURL); err == nil && pageURL != "" {
		b := path.Base(u.Path)
		candidates = append(candidates, strings.TrimSuffix(b, path.Ext(b)))
	}
	candidates = append(candidates, foldersUp(dir, repo)...)
	for _, c := range candidates {
		if name := sanitize.Line(c, maxGameIDRunes); !genericNames[strings.ToLower(name)] {
			return name
		}
	}
	if name := sanitize.Line(filepath.Base(filepath.Clean(repo)), maxGameIDRunes); name != "" && name != "." && name != string(filepath.Separator) {
		return name
	}
	return "web-game"
}

// foldersUp lists the names of dir and the folders above it, up to repo
// when dir is inside it, else up to two above it.
func foldersUp(dir, repo string) []string {
	if dir == "" {
		return nil
	}
	dir = filepath.Clean(dir)
	inside := false
	if repo != "" {
		if rel, err := filepath.Rel(filepath.Clean(repo), dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			inside = true
		}
	}
	var out []string
	for i := 0; ; i++ {
		parent := filepath.Dir(dir)
		if parent == dir {
			return out // a root ("/", "C:\\") names nothing
		}
		out = append(out, filepath.Base(dir))
		if (inside && filepath.Clean(dir) == filepath.Clean(repo)) || (!inside && i == 2) {
			return out
		}
		dir = parent
	}
}
