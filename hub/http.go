package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

func (s *Server) routes(extra func(*http.ServeMux, func(AuthedFunc) http.Handler)) *http.ServeMux {
	mux := http.NewServeMux()
	allowed := map[string][]string{} // path -> methods, for JSON 405 answers
	handle := func(method, path string, h http.Handler) {
		mux.Handle(method+" "+path, h)
		allowed[path] = append(allowed[path], method)
	}
	for _, k := range protocol.Kinds {
		handle("POST", "/v1/"+k.Collection(), s.authed(func(w http.ResponseWriter, r *http.Request, ws string) { s.ingest(w, r, ws, k) }))
		read := "/v1/" + k.Collection()
		if k == protocol.KindTransaction {
			read = "/v1/operations"
		}
		handle("GET", read, s.authed(func(w http.ResponseWriter, r *http.Request, ws string) { s.page(w, r, ws, k) }))
	}
	handle("GET", "/v1/events", s.authed(func(w http.ResponseWriter, r *http.Request, ws string) { s.page(w, r, ws, "") }))
	handle("POST", "/v1/presence", s.authed(s.postPresence))
	handle("GET", "/v1/presence", s.authed(s.getPresence))
	handle("GET", "/v1/subscribe", http.HandlerFunc(s.subscribe))
	handle("GET", "/healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "protocolVersion": protocol.ProtocolVersion, "schemaVersion": protocol.SchemaVersion})
	}))
	if extra != nil {
		extra(mux, func(h AuthedFunc) http.Handler { return s.authed(h) })
	}
	// A path without a method matches every method the specific patterns
	// above do not, so the wrong method gets a JSON 405.
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, path, allow))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// authed checks the bearer token and passes its workspace on.
func (s *Server) authed(h AuthedFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || token == "" {
			writeError(w, http.StatusUnauthorized, protocol.CodeUnauthenticated, "missing Authorization: Bearer <token> (create one with: crosscode-mcp token create)")
			return
		}
		ws, err := s.auth(r.Context(), token)
		if errors.Is(err, store.ErrBadToken) {
			writeError(w, http.StatusUnauthorized, protocol.CodeUnauthenticated, "unknown access token")
			return
		}
		if err != nil {
			s.internal(w, "authenticate", err)
			return
		}
		if q := r.URL.Query().Get("workspaceId"); q != "" && q != ws {
			writeError(w, http.StatusForbidden, protocol.CodeForbidden, fmt.Sprintf("the token belongs to workspace %q, not %q", ws, q))
			return
		}
		h(w, r, ws)
	})
}

// bodyReadWait bounds reading one request body: the server's
// ReadHeaderTimeout bounds only the headers, and a client must not hold a
// handler by trickling a body forever (a variable for tests).
var bodyReadWait = 30 * time.Second

// readBody reads at most MaxBodyBytes, answering 413 beyond, within
// bodyReadWait. (Never called for WebSocket requests.)
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > protocol.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge, fmt.Sprintf("body of %d bytes is over the 1 MiB limit", r.ContentLength))
		return nil, false
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(bodyReadWait))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, protocol.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge, "body is over the 1 MiB limit")
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, fmt.Sprintf("read body: the body did not arrive within %s", bodyReadWait))
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, "read body: "+err.Error())
		return nil, false
	}
	// The whole body is read: lift the deadline, which would otherwise end
	// the connection's background read (and so the request's context)
	// while the handler works. After an error it stays, so the server
	// does not wait for the rest of the body either.
	rc.SetReadDeadline(time.Time{})
	return body, true
}

func (s *Server) ingest(w http.ResponseWriter, r *http.Request, ws string, kind protocol.Kind) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	e, err := protocol.DecodeIngestRequest(body, kind)
	if err != nil {
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, err.Error())
		return
	}
	if e.WorkspaceID != ws {
		writeError(w, http.StatusForbidden, protocol.CodeForbidden, fmt.Sprintf("the token belongs to workspace %q, the envelope to %q", ws, e.WorkspaceID))
		return
	}
	res, err := s.ingester.Ingest(r.Context(), ws, e)
	if err != nil {
		if errors.Is(err, store.ErrClosed) {
			writeError(w, http.StatusServiceUnavailable, protocol.CodeUnavailable, "the service is shutting down; retry")
			return
		}
		if r.Context().Err() != nil {
			return
		}
		s.internal(w, "ingest", err)
		return
	}
	var rule *store.RuleError
	switch {
	case errors.As(res.Err, &rule):
		writeError(w, http.StatusConflict, rule.Code, rule.Message)
	case res.Err != nil:
		s.internal(w, "ingest", res.Err)
	default:
		writeJSON(w, http.StatusOK, res.Receipt)
	}
}

func (s *Server) page(w http.ResponseWriter, r *http.Request, ws string, kind protocol.Kind) {
	q := r.URL.Query()
	after, err := intParam(q.Get("afterSequence"), 0)
	if err != nil || after < 0 {
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, "afterSequence: must be a non-negative integer")
		return
	}
	limit, err := intParam(q.Get("limit"), store.DefaultPageLimit)
	if err != nil || limit < 1 {
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, fmt.Sprintf("limit: must be an integer from 1 to %d", store.MaxPageLimit))
		return
	}
	version := 1
	switch v := q.Get("protocolVersion"); v {
	case "", "1":
	case "2":
		version = 2
	default:
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, fmt.Sprintf("protocolVersion: %q is not supported (1 or 2)", v))
		return
	}
	p, err := s.store.Page(r.Context(), store.PageQuery{Workspace: ws, After: after, Limit: int(min(limit, store.MaxPageLimit)), Kind: kind})
	if err != nil {
		s.internal(w, "page", err)
		return
	}
	if p.TooOld {
		days := s.RetentionFor(p.Plan).Hours() / 24
		if version < 2 {
			writeError(w, http.StatusGone, protocol.CodeCursorTooOld, fmt.Sprintf(
				"afterSequence %d points into history deleted by retention (%g days); resync from %d, and send protocolVersion=2 to get this as data", after, days, p.ResyncFrom))
			return
		}
		writeJSON(w, http.StatusOK, protocol.CursorTooOld{Status: protocol.StatusCursorTooOld, ProtocolVersion: 2, ResyncFrom: p.ResyncFrom, RetentionDays: days})
		return
	}
	// Items are written from the stored canonical bytes, never re-encoded.
	size := 64
	for _, op := range p.Ops {
		size += len(op.Body) + 64
	}
	buf := make([]byte, 0, size)
	if version >= 2 {
		buf = append(buf, `{"status":"ok","protocolVersion":2,"items":[`...)
	} else {
		buf = append(buf, `{"items":[`...)
	}
	for i := range p.Ops {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = p.Ops[i].AppendJSON(buf)
	}
	buf = append(buf, `],"nextCursor":`...)
	buf = strconv.AppendInt(buf, p.NextCursor, 10)
	buf = append(buf, `,"hasMore":`...)
	buf = strconv.AppendBool(buf, p.HasMore)
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
}

func intParam(v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

func (s *Server) postPresence(w http.ResponseWriter, r *http.Request, ws string) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	p, err := protocol.DecodePresenceUpdate(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, err.Error())
		return
	}
	rp, err := s.store.SetPresence(r.Context(), ws, p)
	if err != nil {
		s.internal(w, "presence", err)
		return
	}
	s.fan.presenceChanged(ws, rp)
	writeJSON(w, http.StatusOK, rp)
}

func (s *Server) getPresence(w http.ResponseWriter, r *http.Request, ws string) {
	list, err := s.store.Presence(r.Context(), ws)
	if err != nil {
		s.internal(w, "presence", err)
		return
	}
	if list == nil {
		list = []*protocol.RemotePresence{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": list})
}

func (s *Server) internal(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	s.log.Error(what, "err", err)
	if errors.Is(err, store.ErrUnavailable) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, protocol.CodeUnavailable, "the service's database is unavailable; retry")
		return
	}
	writeError(w, http.StatusInternalServerError, protocol.CodeInternal, what+" failed; see the service log")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"code":"INTERNAL","message":"encode answer"}}`, http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, code protocol.ErrorCode, msg string) {
	writeJSON(w, status, protocol.ErrorBody{Error: protocol.ErrorDetail{Code: code, Message: msg}})
}

// WriteJSON writes v as the service's JSON answer with status: for the
// handlers added with Config.Routes.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// WriteError writes the service's JSON error answer.
func WriteError(w http.ResponseWriter, status int, code protocol.ErrorCode, msg string) {
	writeError(w, status, code, msg)
}
