package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/crosscode/crosscode-mcp/protocol"
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
// with no gaps from each subscriber's ack cursor on.
type broker struct {
	log   *slog.Logger
	heads func(ctx context.Context, workspace string) (int64, error)
	depth int
	slack int // the largest commit, in frames

	mu   sync.Mutex
	subs map[string]map[*subscriber]struct{}
	head map[string]int64 // highest committed serverSequence seen per workspace: published, or read at a subscribe
}

func newBroker(log *slog.Logger, depth, slack int, heads func(context.Context, string) (int64, error)) *broker {
	return &broker{log: log, heads: heads, depth: depth, slack: slack, subs: map[string]map[*subscriber]struct{}{}, head: map[string]int64{}}
}

// subscribe registers a subscriber and returns it with its ack cursor: the
// workspace head. Every operation above the cursor will be queued to it.
func (b *broker) subscribe(ctx context.Context, workspace, replica string) (*subscriber, int64, error) {
	// The store's head is read without the lock, which publish (on the
	// ingest commit path) needs; and only while nothing was published for
	// the workspace since start (b.head keeps it after).
	b.mu.Lock()
	_, known := b.head[workspace]
	b.mu.Unlock()
	var stored int64
	if !known {
		var err error
		if stored, err = b.heads(ctx, workspace); err != nil {
			return nil, 0, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// The cursor is the larger of the store's head, as read, and the
	// highest published serverSequence. Everything up to either is
	// committed, so the subscriber can page it. Anything above both was
	// not yet published when the subscriber is registered below, under
	// the same lock (publish raises b.head under it before it queues), so
	// it is queued to the subscriber: no gap, no duplicate.
	head := max(stored, b.head[workspace])
	b.head[workspace] = head
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
	return s, head, nil
}

// unsubscribe removes s and reports whether another subscriber of the same
// replica is still connected.
func (b *broker) unsubscribe(s *subscriber) (replicaStillOnline bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs[s.workspace], s)
	for o := range b.subs[s.workspace] {
		if o.replica == s.replica {
			return true
		}
	}
	return false
}

// publish queues the frames of committed envelopes (in server order) to
// every subscriber of their workspace. It never blocks: a subscriber that
// is too far behind is failed and must resume by cursor.
func (b *broker) publish(logged []*protocol.Envelope) {
	b.mu.Lock()
	listeners := 0
	for _, e := range logged {
		listeners += len(b.subs[e.WorkspaceID])
		if e.ServerSequence > b.head[e.WorkspaceID] {
			b.head[e.WorkspaceID] = e.ServerSequence
		}
	}
	b.mu.Unlock()
	if listeners == 0 {
		return // nobody to encode frames for; the head moved
	}
	byWS := map[string][]frame{}
	for _, e := range logged {
		data, err := json.Marshal(protocol.NewFanOut(e))
		if err != nil {
			b.log.Error("encode fan-out frame", "seq", e.ServerSequence, "err", err)
			continue
		}
		byWS[e.WorkspaceID] = append(byWS[e.WorkspaceID], frame{seq: e.ServerSequence, data: data})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for ws, frames := range byWS {
		for s := range b.subs[ws] {
			// Skip what the subscriber's cursor already covers.
			i := 0
			for i < len(frames) && frames[i].seq <= s.from {
				i++
			}
			if i < len(frames) {
				b.send(s, frames[i:])
			}
		}
	}
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

// followed returns each workspace with subscribers and the highest
// serverSequence published (or read at a subscribe) for it.
func (b *broker) followed() map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int64, len(b.subs))
	for ws, subs := range b.subs {
		if len(subs) > 0 {
			out[ws] = b.head[ws]
		}
	}
	return out
}

// hasSubscribers reports whether workspace has a subscriber.
func (b *broker) hasSubscribers(workspace string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs[workspace]) > 0
}

// raise moves the workspace's published head up to seq.
func (b *broker) raise(workspace string, seq int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.head[workspace] = max(b.head[workspace], seq)
}
