package coord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// remote speaks the coordination protocol to a service: it uploads the
// outbox in clientSequence order and mirrors the service's log.
type remote struct {
	c      *Coordinator
	base   string
	token  string
	client *http.Client
	cursor string // the mirror's cursor name

	kick chan struct{} // wakes the uploader
	poke chan struct{} // wakes the puller

	mu      sync.Mutex
	waiters map[int64][]chan uploadOutcome // by clientSequence

	pullMu    sync.Mutex
	connected atomic.Bool // the last request reached the service
	// down is set when an upload failed for want of the service (no
	// answer, or a 5xx); while it is, writes answer "queued" at once
	// instead of waiting AckWait each, and the uploader retries every
	// second at most, so it resumes as soon as the service answers.
	down    atomic.Bool
	lastErr atomic.Value
	live    atomic.Bool // the WebSocket subscription is up
	wg      sync.WaitGroup
	// Tests only: the loops running, and the pulls begun and not ended.
	running, pulls atomic.Int32
}

type uploadOutcome struct {
	receipt *protocol.IngestReceipt
	refused *RefusedError
}

func newRemote(c *Coordinator) *remote {
	return &remote{
		c: c, base: strings.TrimRight(c.cfg.Service, "/"), token: c.cfg.Token,
		client: &http.Client{Timeout: c.cfg.HTTPTimeout},
		cursor: "remote:" + c.cfg.Workspace,
		kick:   make(chan struct{}, 1), poke: make(chan struct{}, 1),
		waiters: map[int64][]chan uploadOutcome{},
	}
}

// start starts the loops: the uploader, the puller and the follower;
// wait waits for them once ctx ends.
func (r *remote) start(ctx context.Context) {
	for _, loop := range []func(context.Context){r.uploader, r.puller, r.follower} {
		r.wg.Add(1)
		r.running.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.running.Add(-1)
			loop(ctx)
		}()
	}
	r.wake(r.kick)
}

func (r *remote) wait() { r.wg.Wait() }

func (r *remote) wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// publish commits env to the outbox and waits a moment for its receipt.
func (r *remote) publish(ctx context.Context, env *protocol.Envelope) (*Published, error) {
	entry, err := r.c.cfg.Store.Enqueue(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	if r.c.cfg.Offline {
		return &Published{Envelope: env}, nil // the MCP server's uploader sends it
	}
	ch := make(chan uploadOutcome, 1)
	r.mu.Lock()
	r.waiters[entry.ClientSequence] = append(r.waiters[entry.ClientSequence], ch)
	r.mu.Unlock()
	r.wake(r.kick)
	wait := r.c.cfg.AckWait
	if r.down.Load() {
		wait = min(wait, downAckWait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case out := <-ch:
		if out.refused != nil {
			return nil, out.refused
		}
		if out.receipt == nil { // the upload failed: the service is down
			return &Published{Envelope: env}, nil
		}
		// Read the log through our own operation, so projections (claim
		// arbitration) include it.
		pctx, cancel := context.WithTimeout(ctx, r.c.cfg.AckWait)
		if err := r.pullThrough(pctx, out.receipt.ServerSequence); err != nil {
			r.c.cfg.Logger.Warn("pull after ingest", "err", err)
		}
		cancel()
		return &Published{Envelope: env, Acknowledged: true, ServerSequence: out.receipt.ServerSequence, IngestedAt: out.receipt.IngestedAt}, nil
	case <-t.C:
	case <-ctx.Done():
	}
	return &Published{Envelope: env}, nil
}

// releaseWaiters answers every write waiting for its receipt as queued:
// the upload failed for want of the service, so waiting longer is waiting
// for a timeout.
func (r *remote) releaseWaiters() {
	r.mu.Lock()
	all := r.waiters
	r.waiters = map[int64][]chan uploadOutcome{}
	r.mu.Unlock()
	for _, ws := range all {
		for _, ch := range ws {
			ch <- uploadOutcome{}
		}
	}
}

func (r *remote) notify(clientSeq int64, out uploadOutcome) {
	r.mu.Lock()
	ws := r.waiters[clientSeq]
	delete(r.waiters, clientSeq)
	r.mu.Unlock()
	for _, ch := range ws {
		ch <- out
	}
}

// downAckWait is how long a write waits for its receipt while the
// service is down: long enough for an upload that succeeds at once (the
// service is back) to be acknowledged, short enough that the tool answers
// "queued" within 100 ms.
const downAckWait = 50 * time.Millisecond

// outboxPoll is how often a healthy uploader looks for writes other
// processes of this replica queued (see Config.Offline).
const outboxPoll = 2 * time.Second

// maxDownBackoff bounds the uploader's retry interval while the service
// does not answer, so uploads resume within it once it does.
const maxDownBackoff = time.Second

// unavailableError is an upload that failed for want of the service: no
// answer, or an answer that says it cannot serve now (5xx).
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// uploader uploads pending outbox entries in order whenever kicked, and
// retries with exponential backoff while the service cannot be reached
// (every second at most) or refuses the token (up to 30s).
func (r *remote) uploader(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		// Healthy, it still looks at the outbox now and then: a hook of
		// this agent's client (an Offline client) queues writes there.
		wait := outboxPoll
		if backoff > 0 {
			wait = backoff
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-r.kick:
		case <-timer.C:
		}
		timer.Stop()
		err := r.uploadPending(ctx)
		var unavailable *unavailableError
		switch {
		case err == nil:
			r.down.Store(false)
			backoff = 0
		case errors.As(err, &unavailable):
			r.down.Store(true)
			r.releaseWaiters()
			r.lastErr.Store(err.Error())
			backoff = min(max(backoff*2, 100*time.Millisecond), maxDownBackoff)
		default:
			r.lastErr.Store(err.Error())
			backoff = min(max(backoff*2, 200*time.Millisecond), 30*time.Second)
		}
	}
}

// uploadPending uploads what is pending; an error is a transient failure
// that stopped it (the rest waits, to keep clientSequence order).
func (r *remote) uploadPending(ctx context.Context) error {
	st := r.c.cfg.Store
	for {
		pending, err := st.Pending(ctx, r.c.cfg.Replica, 100)
		if err != nil || len(pending) == 0 {
			return err
		}
		for _, e := range pending {
			status, body, err := r.do(ctx, http.MethodPost, "/v1/"+e.Kind.Collection(), append(append([]byte(`{"envelope":`), e.Body...), '}'))
			switch {
			case err != nil:
				st.Attempted(ctx, e.Replica, e.ClientSequence, err.Error())
				return &unavailableError{err}
			case status == http.StatusOK:
				var rc protocol.IngestReceipt
				if err := json.Unmarshal(body, &rc); err != nil {
					return fmt.Errorf("ingest receipt: %w", err)
				}
				if err := st.Acknowledge(ctx, e.Replica, e.ClientSequence, rc); err != nil {
					return err
				}
				r.notify(e.ClientSequence, uploadOutcome{receipt: &rc})
			case status == http.StatusBadRequest || status == http.StatusConflict || status == http.StatusRequestEntityTooLarge:
				code, msg := errorBody(body)
				st.Refuse(ctx, e.Replica, e.ClientSequence, string(code)+": "+msg)
				ref := &RefusedError{Code: code, Message: msg}
				// The notice first: the caller woken next may read news at once.
				r.c.notice("the service refused envelope %s (clientSequence %d): %s", e.Kind, e.ClientSequence, ref)
				r.notify(e.ClientSequence, uploadOutcome{refused: ref})
			case status == http.StatusUnauthorized || status == http.StatusForbidden:
				code, msg := errorBody(body)
				why := fmt.Sprintf("%s: %s (check --token and --workspace)", code, msg)
				st.Attempted(ctx, e.Replica, e.ClientSequence, why)
				return errors.New(why)
			default:
				_, msg := errorBody(body)
				st.Attempted(ctx, e.Replica, e.ClientSequence, fmt.Sprintf("HTTP %d: %s", status, msg))
				err := fmt.Errorf("ingest: HTTP %d: %s", status, msg)
				if status >= 500 {
					return &unavailableError{err}
				}
				return err
			}
		}
	}
}

func errorBody(body []byte) (protocol.ErrorCode, string) {
	var eb protocol.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		return eb.Error.Code, eb.Error.Message
	}
	return protocol.CodeInternal, strings.TrimSpace(string(body))
}

// do sends one request to the service.
func (r *remote) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.connected.Store(false)
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		r.connected.Store(false)
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	r.connected.Store(true)
	if resp.StatusCode < 500 && r.down.Load() {
		r.wake(r.kick) // the service answers again: upload now
	}
	return resp.StatusCode, b, nil
}

// pull mirrors the service's log from the cursor to its head.
func (r *remote) pull(ctx context.Context) error {
	// Counted from before the lock to before the unlock, so a pull that
	// holds or waits for the lock is counted, and one that let it go is not.
	r.pulls.Add(1)
	r.pullMu.Lock()
	defer r.pullMu.Unlock()
	defer r.pulls.Add(-1)
	ws, st := r.c.cfg.Workspace, r.c.cfg.Store
	for {
		cursor, err := st.Cursor(ctx, r.cursor)
		if err != nil {
			return err
		}
		status, body, err := r.do(ctx, http.MethodGet, "/v1/events?protocolVersion=2&limit=1000&afterSequence="+strconv.FormatInt(cursor, 10)+"&workspaceId="+url.QueryEscape(ws), nil)
		if err != nil {
			r.lastErr.Store(err.Error())
			return err
		}
		if status != http.StatusOK {
			code, msg := errorBody(body)
			err := fmt.Errorf("read events: HTTP %d %s: %s", status, code, msg)
			r.lastErr.Store(err.Error())
			return err
		}
		page, err := protocol.DecodePageResponse(body)
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		if page.TooOld != nil {
			if err := st.Resync(ctx, ws, r.cursor, page.TooOld.ResyncFrom); err != nil {
				return err
			}
			r.c.notice("the service's history before serverSequence %d was deleted by retention (%g days) before this replica read it: "+
				"projections were rebuilt from there; claims and intents from before may be missing, and git stays the source of truth",
				page.TooOld.ResyncFrom, page.TooOld.RetentionDays)
			continue
		}
		next := max(page.Page.NextCursor, cursor)
		if len(page.Page.Items) > 0 || next != cursor {
			if err := st.Mirror(ctx, ws, page.Page.Items, r.cursor, next); err != nil {
				return err
			}
			if len(page.Page.Items) > 0 {
				r.wake(r.c.moved)
			}
		}
		if !page.Page.HasMore {
			return nil
		}
	}
}

// pullThrough pulls until the mirror holds seq.
func (r *remote) pullThrough(ctx context.Context, seq int64) error {
	if cur, err := r.c.cfg.Store.Cursor(ctx, r.cursor); err == nil && cur >= seq {
		return nil
	}
	return r.pull(ctx)
}

// puller pulls whenever poked (by the follower's frames), and every 30s in
// case frames are missed.
func (r *remote) puller(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.wake(r.poke)
		case <-r.poke:
			if err := r.pull(ctx); err != nil && ctx.Err() == nil {
				r.c.cfg.Logger.Debug("pull", "err", err)
			}
		}
	}
}

// follower keeps the mirror current: a WebSocket subscription whose frames
// poke the puller, reconnected with backoff.
func (r *remote) follower(ctx context.Context) {
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		err := r.subscribe(ctx)
		r.live.Store(false)
		if ctx.Err() != nil {
			return
		}
		r.c.cfg.Logger.Debug("subscription ended", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
		if err == nil {
			backoff = 200 * time.Millisecond
		}
	}
}

// subscribe runs one WebSocket subscription until it ends.
func (r *remote) subscribe(ctx context.Context) error {
	u := strings.Replace(strings.Replace(r.base, "https://", "wss://", 1), "http://", "ws://", 1) + "/v1/subscribe"
	dctx, cancel := context.WithTimeout(ctx, r.c.cfg.HTTPTimeout)
	conn, _, err := websocket.Dial(dctx, u, nil)
	cancel()
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)
	sub, _ := json.Marshal(protocol.WSSubscribe{Type: "subscribe", WorkspaceID: r.c.cfg.Workspace, ReplicaID: r.c.cfg.Replica, AccessToken: r.token})
	if err := conn.Write(ctx, websocket.MessageText, sub); err != nil {
		return err
	}
	_, data, err := conn.Read(ctx)
	if err != nil {
		return err
	}
	var ack struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(data, &ack); err != nil || ack.Type != "subscribed" {
		return fmt.Errorf("subscribe refused: %s %s", ack.Code, ack.Message)
	}
	r.live.Store(true)
	r.connected.Store(true)
	if r.down.Load() {
		r.wake(r.kick) // the service answers again: upload now
	}
	// The service marked this replica offline when its previous socket
	// dropped: say where the session stands again.
	r.c.reannounce(ctx)
	// Catch up from the cursor to the subscription's head; frames carry
	// everything after it.
	r.wake(r.poke)
	for {
		_, _, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		// Any frame means the log or presence moved: pull, coalesced.
		r.wake(r.poke)
	}
}

// postPresence reports presence to the service, best effort.
func (r *remote) postPresence(ctx context.Context, p *protocol.PresenceUpdate) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	status, resp, err := r.do(pctx, http.MethodPost, "/v1/presence", body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		code, msg := errorBody(resp)
		return fmt.Errorf("presence: HTTP %d %s: %s", status, code, msg)
	}
	return nil
}
