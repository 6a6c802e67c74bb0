package cappy

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// StaticServer serves a web game's built files on a loopback port: GET and
// HEAD only, a Host that names this machine, no path out of the directory
// (symbolic links included, through os.Root), no directory listings, and
// no caching, so a rebuilt game is what the next launch loads.
type StaticServer struct {
	root *os.Root
	l    net.Listener
	srv  *http.Server
	dir  string
}

// webTypes are the content types a web game depends on, set here so the
// system's mime.types cannot change them (a module script served as
// text/plain does not run).
var webTypes = map[string]string{
	".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8", ".json": "application/json", ".map": "application/json", ".wasm": "application/wasm",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml",
	".ico": "image/x-icon", ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".wav": "audio/wav", ".m4a": "audio/mp4", ".mp4": "video/mp4", ".webm": "video/webm",
	".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf", ".txt": "text/plain; charset=utf-8", ".xml": "application/xml",
}

// contentType is the type of a file by its name ("" when unknown: then
// the content decides, as net/http does).
func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := webTypes[ext]; ok {
		return t
	}
	return mime.TypeByExtension(ext)
}

// ServeStatic serves dir on addr (a loopback address; "" is 127.0.0.1:0).
func ServeStatic(dir, addr string, log *slog.Logger) (*StaticServer, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("game.serve: %s is not a directory (build the game first?)", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("game.serve: %w", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("game.serve: listen: %w", err)
	}
	s := &StaticServer{root: root, l: l, dir: dir}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go s.srv.Serve(l)
	return s, nil
}

// URL is the server's root, http://127.0.0.1:PORT/.
func (s *StaticServer) URL() string { return "http://" + s.l.Addr().String() + "/" }

// Dir is the directory served.
func (s *StaticServer) Dir() string { return s.dir }

// Close stops serving.
func (s *StaticServer) Close() error {
	err := s.srv.Close()
	return errors.Join(err, s.root.Close())
}

func (s *StaticServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isLoopbackHost(r.Host) {
		http.Error(w, "Host must be a loopback name", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "."
	}
	f, fi, err := s.open(name)
	if err == nil && fi.IsDir() {
		f.Close()
		if !strings.HasSuffix(r.URL.Path, "/") {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		name = path.Join(name, "index.html")
		f, fi, err = s.open(name)
	}
	if err != nil || fi.IsDir() {
		if f != nil {
			f.Close()
		}
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	if t := contentType(name); t != "" {
		w.Header().Set("Content-Type", t)
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

// open opens a file inside the root: a path that leaves it (.., or a
// symbolic link pointing out) fails.
func (s *StaticServer) open(name string) (*os.File, fs.FileInfo, error) {
	f, err := s.root.Open(filepath.FromSlash(name))
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
