// Package dashboard is the web page for the people who run the agents: who
// is working on what, where agents collide, what was handed over, what
// passes and fails, and (in local mode) what the game looked like when an
// agent played it.
//
// The page is plain ES modules and CSS embedded in the binary, with no
// build step. It is a client of the coordination service's public API
// (GET /v1/events, GET /v1/presence and the /v1/subscribe fan-out), so
// `crosscode-mcp serve` offers it at / by mounting Routes on the hub, and
// the local dashboard (see Local) serves the same hub handlers over the
// local workspace database.
//
// Security: every response of the page carries a strict
// Content-Security-Policy (scripts and styles from the page's own origin
// only, Trusted Types required, so no string can reach innerHTML), and the
// page writes everything agents or games wrote with textContent.
package dashboard

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strconv"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/protocol"
)

//go:embed assets
var embedded embed.FS

// assets is the page's files, rooted at assets/.
var assets = func() fs.FS {
	sub, err := fs.Sub(embedded, "assets")
	if err != nil {
		panic(err)
	}
	return sub
}()

// CSP is the Content-Security-Policy of every page response: nothing
// inline, nothing from elsewhere, no framing, and Trusted Types required
// with no policy allowed, so the page cannot turn a string into markup.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; media-src 'self' blob:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// Options configure a Dashboard. A nil *Options means the defaults.
type Options struct {
	// Captures, if set, serves this machine's captures (local mode).
	Captures Captures
	// FrameDir is where the capture store's frame files are (the
	// controller's FrameDir: <data>/capture/frames). Empty: no frames.
	FrameDir string
	// VideoDir, if set, is where videos made from frames are kept while
	// the dashboard runs. Empty: no videos.
	VideoDir string
	// MediaDir is where the capture tools keep the videos they made
	// (<data>/capture/media/<op>.mp4); one there is served as it is.
	MediaDir string
	// Denials, if set, serves arbitration's denials (GET /v1/denials) and
	// the claims' lines (GET /v1/queues).
	Denials Denials
	// Session, if set, is the local dashboard's session: it answers
	// POST /dashboard/session with the page's token. Nil: the page asks
	// the user for a workspace token (the service).
	Session func() string
	// Logger receives the dashboard's logs. Default: discard.
	Logger *slog.Logger
}

// Dashboard serves the page and its read endpoints.
type Dashboard struct {
	opts   Options
	log    *slog.Logger
	videos videos
}

// New returns a Dashboard.
func New(opts *Options) *Dashboard {
	d := &Dashboard{}
	if opts != nil {
		d.opts = *opts
	}
	d.log = d.opts.Logger
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	return d
}

// Routes registers the page (GET /, GET /assets/...), the session
// endpoint and the dashboard's read endpoints on mux, the latter behind
// authed; it fits hub.Config.Routes.
func (d *Dashboard) Routes(mux *http.ServeMux, authed func(hub.AuthedFunc) http.Handler) {
	mux.Handle("GET /{$}", secured(http.HandlerFunc(serveIndex)))
	mux.Handle("GET /assets/{file...}", secured(http.HandlerFunc(serveAsset)))
	mux.Handle("POST /dashboard/session", secured(http.HandlerFunc(d.session)))
	mux.Handle("GET /v1/workspace", authed(d.workspace))
	if d.opts.Captures != nil {
		d.captureRoutes(mux, authed)
	}
	if d.opts.Denials != nil {
		mux.Handle("GET /v1/denials", authed(d.denials))
		mux.Handle("GET /v1/queues", authed(d.queues))
	}
}

// secured sets the page's security headers.
func secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SecurityHeaders(w.Header())
		h.ServeHTTP(w, r)
	})
}

// SecurityHeaders sets the headers every page response carries.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
}

func serveIndex(w http.ResponseWriter, r *http.Request) {
	serveFile(w, r, "index.html")
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "index.html" || !fs.ValidPath(name) {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no such asset")
		return
	}
	serveFile(w, r, name)
}

// contentTypes are the types of the page's files, by extension.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

func serveFile(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(assets, name)
	ct, known := contentTypes[path.Ext(name)]
	if err != nil || !known {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no such asset")
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

// sessionAnswer answers POST /dashboard/session.
type sessionAnswer struct {
	Mode  string `json:"mode"`            // "service" or "local"
	Token string `json:"token,omitempty"` // local: the page's token
}

// session tells the page how to authenticate: ask the user for a token
// (service) or use the local dashboard's (reached only with its cookie).
func (d *Dashboard) session(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if d.opts.Session == nil {
		writeJSON(w, http.StatusOK, sessionAnswer{Mode: "service"})
		return
	}
	writeJSON(w, http.StatusOK, sessionAnswer{Mode: "local", Token: d.opts.Session()})
}

// workspaceAnswer answers GET /v1/workspace.
type workspaceAnswer struct {
	WorkspaceID string   `json:"workspaceId"`
	Features    []string `json:"features"` // "captures", "denials", "queues"
}

// workspace names the token's workspace and what this server offers.
func (d *Dashboard) workspace(w http.ResponseWriter, r *http.Request, ws string) {
	a := workspaceAnswer{WorkspaceID: ws, Features: []string{}}
	if d.opts.Captures != nil {
		a.Features = append(a.Features, "captures")
	}
	if d.opts.Denials != nil {
		a.Features = append(a.Features, "denials", "queues")
	}
	writeJSON(w, http.StatusOK, a)
}

// writeJSON and writeError answer as the service does.
var (
	writeJSON  = hub.WriteJSON
	writeError = hub.WriteError
)

// internal answers a failure of the server's own and logs it.
func (d *Dashboard) internal(w http.ResponseWriter, what string, err error) {
	d.log.Error(what, "err", err)
	writeError(w, http.StatusInternalServerError, protocol.CodeInternal, what+" failed; see the log")
}
