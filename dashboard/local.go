package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Local guards the local dashboard (`crosscode-mcp dashboard`): the hub's
// handlers over the local workspace database, on loopback.
//
//   - The printed URL carries a one-time secret. GET /login?secret=S
//     exchanges it, once, for a session cookie named after the port
//     (HttpOnly, SameSite=Strict, Path=/) and redirects to / without it.
//     The secret is never valid again.
//   - Every other request needs the cookie: without it, nothing (not even
//     the page) is served.
//   - Host must be a loopback name with this port (DNS rebinding), and an
//     Origin, when sent, this server's own.
//   - Only reads: GET and HEAD, and POST /dashboard/session, which gives
//     the page its token for the API and the fan-out.
type Local struct {
	workspace string
	port      int
	cookie    string // the cookie's name: crosscode_dashboard_<port>
	token     string // the page's token for the hub's API

	mu       sync.Mutex
	secret   string          // "" once exchanged
	sessions map[string]bool // cookie values handed out
}

// NewLocal returns the gate of a local dashboard of workspace on port.
func NewLocal(workspace string, port int) *Local {
	return &Local{
		workspace: workspace, port: port, cookie: "crosscode_dashboard_" + strconv.Itoa(port),
		token: randomToken(), secret: randomToken(), sessions: map[string]bool{},
	}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// URL is the one URL to open: it carries the one-time secret. Print it
// once; never log it.
func (l *Local) URL() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("http://127.0.0.1:%d/login?secret=%s", l.port, l.secret)
}

// Session is the page's token (handed out behind the cookie).
func (l *Local) Session() string { return l.token }

// Authenticate accepts the page's token only; it fits hub.Config.Authenticate.
func (l *Local) Authenticate(_ context.Context, token string) (string, error) {
	if subtle.ConstantTimeCompare([]byte(token), []byte(l.token)) == 1 {
		return l.workspace, nil
	}
	return "", store.ErrBadToken
}

// allowedHost reports whether host is a loopback name with this port.
func (l *Local) allowedHost(host string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != strconv.Itoa(l.port) {
		return false
	}
	switch strings.ToLower(h) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}

// hasSession reports whether r carries a cookie this dashboard handed out.
func (l *Local) hasSession(r *http.Request) bool {
	c, err := r.Cookie(l.cookie)
	if err != nil || c.Value == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for v := range l.sessions {
		if subtle.ConstantTimeCompare([]byte(v), []byte(c.Value)) == 1 {
			return true
		}
	}
	return false
}

// Wrap puts the gate in front of h; it fits hub.Config.Wrap.
func (l *Local) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SecurityHeaders(w.Header())
		w.Header().Set("Cache-Control", "no-store")
		if !l.allowedHost(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, protocol.CodeForbidden, "this dashboard answers only to 127.0.0.1, localhost or [::1] with its own port")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !l.allowedOrigin(o) {
			writeError(w, http.StatusForbidden, protocol.CodeForbidden, "cross-origin request refused")
			return
		}
		if r.URL.Path == "/login" {
			l.login(w, r)
			return
		}
		if !l.hasSession(r) {
			writeError(w, http.StatusUnauthorized, protocol.CodeUnauthenticated, "no dashboard session: open the URL that crosscode-mcp dashboard printed")
			return
		}
		switch {
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
		case r.Method == http.MethodPost && r.URL.Path == "/dashboard/session":
		default:
			writeError(w, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed, "the local dashboard only reads")
			return
		}
		if r.Header.Get("Authorization") == "" {
			// Images and videos the page shows carry the cookie only.
			r.Header.Set("Authorization", "Bearer "+l.token)
		}
		h.ServeHTTP(w, r)
	})
}

func (l *Local) allowedOrigin(origin string) bool {
	rest, ok := strings.CutPrefix(origin, "http://")
	return ok && l.allowedHost(rest)
}

// login exchanges the one-time secret for the session cookie.
func (l *Local) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed, "GET /login?secret=... only")
		return
	}
	if l.hasSession(r) {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	got := r.URL.Query().Get("secret")
	l.mu.Lock()
	ok := l.secret != "" && subtle.ConstantTimeCompare([]byte(got), []byte(l.secret)) == 1
	var sid string
	if ok {
		l.secret = "" // never valid again
		sid = randomToken()
		l.sessions[sid] = true
	}
	l.mu.Unlock()
	if !ok {
		writeError(w, http.StatusForbidden, protocol.CodeUnauthenticated, "this link is not valid (each one works once): run crosscode-mcp dashboard again and open the URL it prints")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: l.cookie, Value: sid, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
