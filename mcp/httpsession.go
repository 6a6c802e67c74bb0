package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/identity"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Sessions of the MCP endpoint.
//
// Several instances of the service may serve one MCP session without
// affinity, so a session keeps no state on an instance that another would
// need: its id (Mcp-Session-Id) carries what it is (a random nonce, the
// client's name from initialize, when it began), signed with a key derived
// from the workspace token it was opened with, so any instance can read it
// and no other token can use it. Its news position is in the service's
// database (a news mark), and its replica's clientSequences are assigned
// at ingest from the replica's highest (NextSequence), so they go on
// across instances and are never reused.
//
// Clients of protocol revision 2026-07-28 have no protocol session: each
// request names its client in _meta. Their session is the one the client
// names in _meta (sessionId), else one per actor and client name.

// httpCall is what the endpoint learnt of one request, in its context.
type httpCall struct {
	workspace, token string
	actor            string          // X-Crosscode-Actor, checked
	id               json.RawMessage // the JSON-RPC request id
	method           string
	initClient       string // clientInfo.name of an initialize request
	modern           bool   // protocol revision 2026-07-28 or later
	session          *mcpSession
}

type callKey struct{}

func withCall(ctx context.Context, c *httpCall) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callFrom(ctx context.Context) *httpCall {
	c, _ := ctx.Value(callKey{}).(*httpCall)
	return c
}

// parse reads the JSON-RPC message's id, method and client, and refuses a
// batch (MCP has none since 2025-06-18: one message per request bounds
// what one request costs). A body that is not JSON is mcp-go's to answer.
func (c *httpCall) parse(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		jsonRPCError(w, http.StatusBadRequest, nil, mcpgo.INVALID_REQUEST, "JSON-RPC batches are not supported: send one message per request")
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta       map[string]any `json:"_meta"`
			ClientInfo struct {
				Name string `json:"name"`
			} `json:"clientInfo"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return true
	}
	c.id, c.method = compactJSON(m.ID), m.Method
	if m.Method == string(mcpgo.MethodInitialize) {
		c.initClient = m.Params.ClientInfo.Name
	}
	v, _ := m.Params.Meta[mcpgo.MetaKeyProtocolVersion].(string)
	c.modern = mcpgo.IsModernProtocol(v) || mcpgo.IsModernProtocol(r.Header.Get(mcpgo.HeaderProtocolVersion))
	return true
}

func compactJSON(b json.RawMessage) json.RawMessage {
	var out bytes.Buffer
	if len(b) == 0 || json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// checkActor checks an X-Crosscode-Actor value: an actor id, one line.
func checkActor(a string) (string, error) {
	a = strings.TrimSpace(a)
	if a == "" || len(a) > protocol.MaxIDBytes || !utf8.ValidString(a) || sanitize.Line(a, 0) != a {
		return "", fmt.Errorf("%s: want an actor id (one line of at most %d bytes, no control or invisible characters), such as an email address", HeaderActor, protocol.MaxIDBytes)
	}
	return a, nil
}

// mcpSession is what a session id carries.
type mcpSession struct {
	Nonce  string `json:"n"`
	Client string `json:"c,omitempty"` // clientInfo.name from initialize
	Began  int64  `json:"t"`           // unix seconds
}

const sessionIDPrefix = "ccs1."

// sessionKey is the key that signs the session ids of a token.
func sessionKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("crosscode-mcp MCP session id v1"))
	return m.Sum(nil)
}

// newSessionID opens a session for a client of token.
func newSessionID(token, client string) (string, *mcpSession) {
	var n [12]byte
	rand.Read(n[:])
	s := &mcpSession{Nonce: hex.EncodeToString(n[:]), Client: sanitize.Line(client, 120), Began: time.Now().Unix()}
	payload, _ := json.Marshal(s)
	m := hmac.New(sha256.New, sessionKey(token))
	m.Write(payload)
	enc := base64.RawURLEncoding
	return sessionIDPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(m.Sum(nil)[:16]), s
}

// errSession is a session id this token did not open.
var errSession = errors.New("unknown MCP session")

// openSessionID reads a session id that token opened.
func openSessionID(id, token string) (*mcpSession, error) {
	rest, ok := strings.CutPrefix(id, sessionIDPrefix)
	p, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(id) > 1024 {
		return nil, errSession
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(p)
	if err != nil {
		return nil, errSession
	}
	got, err := enc.DecodeString(sig)
	if err != nil {
		return nil, errSession
	}
	m := hmac.New(sha256.New, sessionKey(token))
	m.Write(payload)
	if !hmac.Equal(got, m.Sum(nil)[:16]) {
		return nil, errSession
	}
	var s mcpSession
	if json.Unmarshal(payload, &s) != nil || s.Nonce == "" {
		return nil, errSession
	}
	return &s, nil
}

// sessionIDs gives mcp-go the session ids of each request's token.
type sessionIDs struct{}

func (sessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return callSessions{} // the idle sweeper: nothing to do
	}
	return callSessions{callFrom(r.Context())}
}

type callSessions struct{ c *httpCall }

// Generate opens the session of an initialize request.
func (m callSessions) Generate() string {
	if m.c == nil {
		return ""
	}
	id, s := newSessionID(m.c.token, m.c.initClient)
	m.c.session = s
	return id
}

// Validate: ServeHTTP opened the session id before (else answered 404).
func (m callSessions) Validate(id string) (bool, error) {
	if id == "" || m.c == nil {
		return false, nil // a client without a session: served as one of its own
	}
	_, err := openSessionID(id, m.c.token)
	return false, err
}

// Terminate: a session has nothing on the instances to drop; ServeHTTP
// reports it offline.
func (callSessions) Terminate(string) (bool, error) { return false, nil }

// callerOf is who makes the call in ctx: the coordination identity of
// its session (spec section 15).
func callerOf(ctx context.Context, meta map[string]any) coord.Caller {
	call := callFrom(ctx)
	if call == nil {
		call = &httpCall{}
	}
	name := clientName(ctx)
	if name == "" && call.session != nil {
		name = call.session.Client
	}
	provider := protocol.ProviderUnknown
	if name != "" {
		provider = identity.ProviderFromClient(name)
	}
	actor := call.actor
	if actor == "" {
		actor = sanitize.Line(strings.TrimSpace(name), 120)
	}
	if actor == "" {
		actor = "mcp-client"
	}
	var suffix, key string
	if call.session != nil {
		// Request ids are unique within an MCP session, and a session id
		// is ours: (session, request id) names one call for ever.
		suffix = call.session.Nonce
		if len(call.id) > 0 && len(call.id) <= 200 {
			key = "s:" + suffix + "/" + string(call.id)
		}
	} else {
		named := identity.SessionReference(identity.SessionRefInput{CallMeta: meta})
		sk := "agent:" + actor + "\x00" + name
		if named != "" {
			sk = "meta:" + named
		}
		h := sha256.Sum256([]byte(call.workspace + "\x00" + sk))
		suffix = hex.EncodeToString(h[:12])
		// Without a protocol session, request ids start over with each
		// connection of the client (a session named in _meta may span
		// several): only an id the client gives each tool call names a
		// call for ever.
		if use := callIDOf(meta); use != "" {
			key = "t:" + suffix + "/" + use
		}
	}
	sessionID := "ses_mcp_" + suffix
	ref := identity.SessionReference(identity.SessionRefInput{Provider: provider, CallMeta: meta, SessionID: sessionID})
	return coord.Caller{Actor: actor, Replica: "rep_mcp_" + suffix, Session: sessionID, Key: key,
		Agent: protocol.Agent{Provider: provider, AdapterID: coord.AdapterID, SessionReference: ref}}
}

// callIDOf is the id a client gives one tool call in its _meta, unique
// for ever, when it gives one: Claude Code's claudecode/toolUseId (the
// model's tool use id).
func callIDOf(meta map[string]any) string {
	if v, ok := meta["claudecode/toolUseId"].(string); ok && v != "" && len(v) <= 200 {
		return v
	}
	return ""
}

// stampCaller runs before every tool: it names the caller of the call,
// catches this instance's mirror up with the log (so the call sees what
// any instance logged before it), and keeps the session's presence.
func (s *HTTPServer) stampCaller(c *coord.Coordinator) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			var meta map[string]any
			if req.Params.Meta != nil {
				meta = req.Params.Meta.AdditionalFields
			}
			ctx = coord.WithCaller(ctx, callerOf(ctx, meta))
			if err := c.Sync(ctx); err != nil {
				return nil, err
			}
			s.online(ctx, c)
			return next(ctx, req)
		}
	}
}
