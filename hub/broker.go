package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// frame is one encoded fan-out frame. Logged frames carry their
// serverSequence; presence frames have seq 0.
type frame struct {
	seq  int64
	data []byte
}

// subscriber is one WebSocket subscription's queue. The broker only ever
// does non-blocking sends to it; the connection's writer drains it.
type subscriber struct {
	workspace, replica string
	from               int64 // frames with seq <= from are already covered by the ack cursor
	// queue holds one slice per commit (or presence change); pending counts
	// the frames in it not yet written. A subscriber more than the queue
	// depth of frames behind, beyond the largest commit, when a commit
	// arrives is failed; large commits never fail one that keeps up.
	queue    chan []frame
	pending  atomic.Int64
	overflow chan struct{} // closed when the subscriber fell behind
	once     sync.Once
}

func (s *subscriber) fail() { s.once.Do(func() { close(s.overflow) }) }

// broker fans committed operations out to subscribers, in server order,
// with no gaps from each subscriber's ack cursor on, whichever instance
// of the service committed them.
//
// Every serverSequence up to a workspace's committed head is committed
// (a workspace's commits are in serverSequence order), so the broker
// keeps, per workspace, pub: every frame up to it has been queued to every
// subscriber whose cursor is below it. This instance's commits arrive
// through publish and are queued at once when they follow pub; anything
// else (another instance's commits, heard of through a notice or the
// periodic head check, or a local commit after such a gap) is read from
// the table by the catch-up loop (see fanout.go) from pub on.
type broker struct {
	log   *slog.Logger
	heads func(ctx context.Context, workspace string) (int64, error)
	depth int
	slack int // the largest commit, in frames

	mu    sync.Mutex
	subs  map[string]map[*subscriber]struct{}
	pub   map[string]int64   // per workspace: frames up to here are queued (see above)
	known map[string]int64   // per workspace: the highest committed head heard of
	held  map[string][]frame // local frames waiting behind a gap, in order
	wake  chan struct{}      // pokes the catch-up loop
}

// maxHeld bounds the local frames held behind a gap per workspace; past
// it they are dropped and read from the table instead.
const maxHeld = 4096

func newBroker(log *slog.Logger, depth, slack int, heads func(context.Context, string) (int64, error)) *broker {
	return &broker{log: log, heads: heads, depth: depth, slack: slack,
		subs: map[string]map[*subscriber]struct{}{}, pub: map[string]int64{}, known: map[string]int64{}, held: map[string][]frame{},
		wake: make(chan struct{}, 1)}
}

// subscribe registers a subscriber and returns it with its ack cursor:
// the workspace's committed head, or what is already queued past it.
// Every operation above the cursor will be queued to it.
func (b *broker) subscribe(ctx context.Context, workspace, replica string) (*subscriber, int64, error) {
	// With subscribers, pub follows the workspace; without, it may be
	// stale (other instances commit too), so the store's head is read:
	// without the lock, which publish (on the ingest commit path) needs.
	b.mu.Lock()
	followed := len(b.subs[workspace]) > 0
	b.mu.Unlock()
	var stored int64
	if !followed {
		var err error
		if stored, err = b.heads(ctx, workspace); err != nil {
			return nil, 0, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Everything up to the cursor is committed, so the subscriber can
	// page it; everything above it is queued to the subscriber once pub
	// passes it, which happens under this lock after the registration.
	head := max(stored, b.pub[workspace])
	if len(b.subs[workspace]) == 0 {
		b.pub[workspace] = head
		b.held[workspace] = nil
	}
	b.known[workspace] = max(b.known[workspace], head)
	s := &subscriber{
		workspace: workspace, replica: replica, from: head,
		// At most depth+slack frames are pending when a commit is queued,
		// and every queued element holds at least one frame.
		queue:    make(chan []frame, b.depth+b.slack+1),
		overflow: make(chan struct{}),
	}
	if b.subs[workspace] == nil {
		b.subs[workspace] = map[*subscriber]struct{}{}
	}
	b.subs[workspace][s] = struct{}{}
	b.poke() // a notice may have come in while the head was read
	return s, head, nil
}

// unsubscribe removes s and reports whether another subscriber of the same
// replica is still connected here.
func (b *broker) unsubscribe(s *subscriber) (replicaStillOnline bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs[s.workspace], s)
	if len(b.subs[s.workspace]) == 0 {
		delete(b.subs, s.workspace)
		delete(b.held, s.workspace)
	}
	for o := range b.subs[s.workspace] {
		if o.replica == s.replica {
			return true
		}
	}
	return false
}

// connections lists the (workspace, replica) of every subscription here.
func (b *broker) connections() [][2]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[[2]string]bool{}
	var out [][2]string
	for ws, subs := range b.subs {
		for s := range subs {
			if k := [2]string{ws, s.replica}; s.replica != "" && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

func (b *broker) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// publish queues the frames of this instance's committed envelopes (in
// server order) to every subscriber of their workspace. It never blocks:
// a subscriber that is too far behind is failed and must resume by cursor.
func (b *broker) publish(logged []*protocol.Envelope) {
	b.mu.Lock()
	listened := map[string]bool{}
	for _, e := range logged {
		ws := e.WorkspaceID
		b.known[ws] = max(b.known[ws], e.ServerSequence)
		if len(b.subs[ws]) == 0 {
			b.pub[ws] = max(b.pub[ws], e.ServerSequence) // nobody to tell; what is committed is covered
		} else {
			listened[ws] = true
		}
	}
	b.mu.Unlock()
	if len(listened) == 0 {
		return
	}
	byWS := map[string][]frame{}
	for _, e := range logged {
		if !listened[e.WorkspaceID] {
			continue
		}
		if f, ok := b.encode(e); ok {
			byWS[e.WorkspaceID] = append(byWS[e.WorkspaceID], f)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for ws, frames := range byWS {
		if !b.deliver(ws, frames) {
			// A gap before them: hold them for the catch-up loop.
			if h := append(b.held[ws], frames...); len(h) <= maxHeld {
				b.held[ws] = h
			} else {
				b.held[ws] = nil
			}
			b.poke()
		}
	}
}

// encode builds an envelope's fan-out frame.
func (b *broker) encode(e *protocol.Envelope) (frame, bool) {
	data, err := json.Marshal(protocol.NewFanOut(e))
	if err != nil {
		b.log.Error("encode fan-out frame", "seq", e.ServerSequence, "err", err)
		return frame{}, false
	}
	return frame{seq: e.ServerSequence, data: data}, true
}

// deliver queues the frames (consecutive, in order) that follow pub to
// every subscriber of ws, with b.mu held, and reports false if there is a
// gap between pub and the first frame above it. Frames at or below pub
// were delivered before.
func (b *broker) deliver(ws string, frames []frame) bool {
	pub := b.pub[ws]
	i := 0
	for i < len(frames) && frames[i].seq <= pub {
		i++
	}
	frames = frames[i:]
	if len(frames) == 0 {
		return true
	}
	if frames[0].seq != pub+1 {
		return false
	}
	for s := range b.subs[ws] {
		// Skip what the subscriber's cursor already covers.
		j := 0
		for j < len(frames) && frames[j].seq <= s.from {
			j++
		}
		if j < len(frames) {
			b.send(s, frames[j:])
		}
	}
	b.pub[ws] = frames[len(frames)-1].seq
	b.known[ws] = max(b.known[ws], b.pub[ws])
	return true
}

// deliverHeld queues what was held behind a gap that pub has now passed.
func (b *broker) deliverHeld(ws string) {
	h := b.held[ws]
	if len(h) == 0 {
		return
	}
	pub := b.pub[ws]
	i := 0
	for i < len(h) && h[i].seq <= pub {
		i++
	}
	h = h[i:]
	if len(h) > 0 && h[0].seq == pub+1 {
		// Held frames are consecutive runs (one per commit), possibly with
		// gaps between runs: deliver the first run.
		n := 1
		for n < len(h) && h[n].seq == h[n-1].seq+1 {
			n++
		}
		b.deliver(ws, h[:n])
		h = h[n:]
	}
	b.held[ws] = h
}

// publishPresence queues a presence frame to every subscriber of workspace.
func (b *broker) publishPresence(workspace string, p *protocol.RemotePresence) {
	data, err := json.Marshal(protocol.FanOut{Type: "presence", Presence: p})
	if err != nil {
		b.log.Error("encode presence frame", "err", err)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[workspace] {
		b.send(s, []frame{{data: data}})
	}
}

func (b *broker) send(s *subscriber, frames []frame) {
	if s.pending.Load() > int64(b.depth+b.slack) {
		s.fail()
		return
	}
	select {
	case s.queue <- frames:
		s.pending.Add(int64(len(frames)))
	default:
		s.fail()
	}
}

// heard records committed heads another instance announced (or the
// periodic check read) and wakes the catch-up loop for those behind.
func (b *broker) heard(heads map[string]int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	behind := false
	for ws, h := range heads {
		if h > b.known[ws] {
			b.known[ws] = h
		}
		if len(b.subs[ws]) == 0 {
			continue
		}
		behind = behind || b.known[ws] > b.pub[ws]
	}
	if behind {
		b.poke()
	}
}

// hasSubscribers reports whether workspace has a subscriber.
func (b *broker) hasSubscribers(workspace string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs[workspace]) > 0
}

// followed lists the workspaces that have subscribers here.
func (b *broker) followed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.subs))
	for ws := range b.subs {
		out = append(out, ws)
	}
	return out
}

// lagging returns a workspace with subscribers whose known head is above
// pub, with pub, the known head and the first held frame's seq (0 if
// none), or ok false.
func (b *broker) lagging(skip map[string]bool) (ws string, pub, known, firstHeld int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for w := range b.subs {
		if !skip[w] && b.known[w] > b.pub[w] {
			if h := b.held[w]; len(h) > 0 {
				firstHeld = h[0].seq
			}
			return w, b.pub[w], b.known[w], firstHeld, true
		}
	}
	return "", 0, 0, 0, false
}

// caughtUp delivers frames read from the table for ws, then what was
// held behind them.
func (b *broker) caughtUp(ws string, frames []frame) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.subs[ws]) == 0 {
		return
	}
	b.deliver(ws, frames)
	b.deliverHeld(ws)
}

// lost fails every subscriber of ws: retention deleted frames that the
// broker had not yet read for them. They resume by cursor (and are told
// it is too old); pub moves past what is gone.
func (b *broker) lost(ws string, resyncFrom int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[ws] {
		s.fail()
	}
	b.pub[ws] = max(b.pub[ws], resyncFrom)
	b.held[ws] = nil
}

// framesOf encodes a page of stored operations as frames.
func (b *broker) framesOf(ops []store.Op) []frame {
	out := make([]frame, 0, len(ops))
	for i := range ops {
		e, err := ops[i].Envelope()
		if err != nil {
			b.log.Error("decode stored operation", "seq", ops[i].Seq, "err", err)
			return out // a gap: delivery stops before it
		}
		if f, ok := b.encode(e); ok {
			out = append(out, f)
		} else {
			return out
		}
	}
	return out
}
