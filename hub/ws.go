package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// WebSocket timings.
const pingEvery = 20 * time.Second // keepalive; a dead peer goes offline

// writeWait is how long one frame may take to be written (a variable for
// tests).
var writeWait = 10 * time.Second

// subscribeWait is how soon after the upgrade the subscribe frame must
// arrive (a variable for tests).
var subscribeWait = 10 * time.Second

// subscribe serves GET /v1/subscribe: a WebSocket whose first client frame
// is {"type":"subscribe",...}; then the service sends fan-out frames for
// every operation after the acknowledged cursor, in server order.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) {
	// Counted before Accept hijacks the connection, so Close waits for it.
	if !s.addWS() {
		writeError(w, http.StatusServiceUnavailable, protocol.CodeUnavailable, "the service is shutting down; retry")
		return
	}
	defer s.wsWG.Done()
	// websocket.Accept answers bad upgrades in plain text; answer the
	// common ones here, as JSON like every other error.
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		writeError(w, http.StatusUpgradeRequired, protocol.CodeSchemaInvalid, "GET /v1/subscribe is a WebSocket: send Connection: Upgrade and Upgrade: websocket")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, r.Host) {
			writeError(w, http.StatusForbidden, protocol.CodeForbidden, fmt.Sprintf("cross-origin WebSocket from %q refused", origin))
			return
		}
	}
	// The default Origin check refuses browsers from other sites; tools
	// send no Origin. Authentication is the subscribe frame's token.
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 10)
	ctx := r.Context()

	refuse := func(code protocol.ErrorCode, msg string) {
		b, _ := json.Marshal(protocol.WSError{Type: "error", Code: code, Message: msg})
		wctx, cancel := context.WithTimeout(ctx, writeWait)
		defer cancel()
		if c.Write(wctx, websocket.MessageText, b) == nil {
			c.Close(protocol.CloseRefused, string(code))
		}
	}
	// A Read whose context ends closes the connection at once, before an
	// error frame could be sent. So the first Read has no deadline: a
	// watcher refuses a client that sends nothing within subscribeWait,
	// or closes it as going away when the service starts shutting down
	// meanwhile (so Close does not wait for a silent client); either ends
	// the Read. The handler waits for the watcher and returns if it acted,
	// so the connection never has two writers.
	readDone := make(chan struct{})
	watcherActed := make(chan bool, 1)
	go func() {
		t := time.NewTimer(subscribeWait)
		defer t.Stop()
		select {
		case <-readDone:
			watcherActed <- false
		case <-t.C:
			refuse(protocol.CodeSchemaInvalid, fmt.Sprintf("expected a subscribe frame within %s", subscribeWait))
			watcherActed <- true
		case <-s.shutdown:
			c.Close(websocket.StatusGoingAway, "service shutting down; reconnect and subscribe again")
			watcherActed <- true
		}
	}()
	typ, data, err := c.Read(ctx)
	close(readDone)
	if <-watcherActed {
		return
	}
	switch {
	case err != nil:
		return
	case typ != websocket.MessageText:
		refuse(protocol.CodeSchemaInvalid, "frames must be JSON text")
		return
	}
	req, err := protocol.DecodeWSSubscribe(data)
	if err != nil {
		refuse(protocol.CodeSchemaInvalid, err.Error())
		return
	}
	ws, err := s.auth(ctx, req.AccessToken)
	switch {
	case errors.Is(err, store.ErrBadToken):
		refuse(protocol.CodeUnauthenticated, "unknown access token")
		return
	case err != nil:
		s.log.Error("authenticate", "err", err)
		refuse(protocol.CodeInternal, "authentication failed; see the service log")
		return
	case ws != req.WorkspaceID:
		refuse(protocol.CodeForbidden, fmt.Sprintf("the token belongs to workspace %q, not %q", ws, req.WorkspaceID))
		return
	}
	sub, head, err := s.broker.subscribe(ctx, ws, req.ReplicaID)
	if err != nil {
		s.log.Error("subscribe", "err", err)
		refuse(protocol.CodeInternal, "subscribe failed; see the service log")
		return
	}
	defer s.unsubscribe(sub)
	if c, ok := s.store.(Connections); ok && req.ReplicaID != "" {
		// Best effort: without the record, another instance where the
		// replica's subscription ends may set it offline early.
		if err := c.Connected(ctx, ws, req.ReplicaID); err != nil {
			s.log.Warn("record the subscription", "workspace", ws, "replica", req.ReplicaID, "err", err)
		}
	}

	ack, _ := json.Marshal(protocol.WSSubscribed{Type: "subscribed", Cursor: head})
	if !write(ctx, c, ack) {
		return
	}
	peerGone := c.CloseRead(ctx)
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	last := head // the last serverSequence written to this subscriber
	for {
		select {
		case frames := <-sub.queue:
			for _, f := range frames {
				if !write(ctx, c, f.data) {
					return
				}
				if f.seq > 0 {
					last = f.seq
				}
			}
			sub.pending.Add(-int64(len(frames)))
		case <-sub.overflow:
			s.log.Warn("closing slow subscriber", "workspace", ws, "replica", req.ReplicaID, "cursor", last)
			c.Close(protocol.CloseSlowConsumer, fmt.Sprintf("%s: fell behind; resume with GET /v1/events?afterSequence=%d", protocol.CodeSlowConsumer, last))
			return
		case <-peerGone.Done():
			return
		case <-s.shutdown:
			c.Close(websocket.StatusGoingAway, "service shutting down; reconnect and resume from your cursor")
			return
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, writeWait)
			err := c.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// headerHas reports whether the comma-separated header key holds token.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func write(ctx context.Context, c *websocket.Conn, b []byte) bool {
	wctx, cancel := context.WithTimeout(ctx, writeWait)
	defer cancel()
	return c.Write(wctx, websocket.MessageText, b) == nil
}

// unsubscribe drops sub and, when it was the replica's last connection,
// marks the replica offline and tells the others; but not when the service
// is shutting down: then the replica is not leaving, the service is
// restarting, and the replica reconnects to the next one.
func (s *Server) unsubscribe(sub *subscriber) {
	if s.broker.unsubscribe(sub) {
		return
	}
	select {
	case <-s.shutdown:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := s.store.MarkOffline(ctx, sub.workspace, sub.replica)
	if err != nil {
		s.log.Error("mark offline", "err", err)
		return
	}
	if p != nil {
		s.fan.presenceChanged(sub.workspace, p)
	}
}
