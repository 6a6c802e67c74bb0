package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// frame is one encoded fan-out frame. Logged frames carry their
// serverSequence; presence frames have seq 0.
type frame struct {
	seq  int64
	ws   string
	data []byte
}

// subscriber is one WebSocket subscription's queue. The broker only ever
// does non-blocking sends to it; the connection's writer drains it.
type subscriber struct {
	workspace, replica string
	from               int64 // frames with seq <= from are already covered by the ack cursor
	queue              chan frame
	overflow           chan struct{} // closed when the queue overflowed
	once               sync.Once
}

func (s *subscriber) fail() { s.once.Do(func() { close(s.overflow) }) }

// broker fans committed operations out to subscribers, in server order,
// with no gaps from each subscriber's ack cursor on.
type broker struct {
	log   *slog.Logger
	heads func(ctx context.Context, workspace string) (int64, error)
	depth int

	mu   sync.Mutex
	subs map[string]map[*subscriber]struct{}
	head map[string]int64 // highest published serverSequence per workspace
}

func newBroker(log *slog.Logger, depth int, heads func(context.Context, string) (int64, error)) *broker {
	return &broker{log: log, heads: heads, depth: depth, subs: map[string]map[*subscriber]struct{}{}, head: map[string]int64{}}
}

// subscribe registers a subscriber and returns it with its ack cursor: the
// workspace head. Every operation above the cursor will be queued to it.
func (b *broker) subscribe(ctx context.Context, workspace, replica string) (*subscriber, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	head, ok := b.head[workspace]
	if !ok {
		// Nothing published for this workspace since start: its head is
		// the store's. Reading it under the lock orders it against publish:
		// operations committed but not yet published are <= head, and are
		// skipped for this subscriber; anything later is published after.
		var err error
		if head, err = b.heads(ctx, workspace); err != nil {
			return nil, 0, err
		}
	}
	s := &subscriber{workspace: workspace, replica: replica, from: head, queue: make(chan frame, b.depth), overflow: make(chan struct{})}
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
// every subscriber of their workspace. It never blocks: a subscriber whose
// queue is full is failed and must resume by cursor.
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
	frames := make([]frame, 0, len(logged))
	for _, e := range logged {
		data, err := json.Marshal(protocol.NewFanOut(e))
		if err != nil {
			b.log.Error("encode fan-out frame", "seq", e.ServerSequence, "err", err)
			continue
		}
		frames = append(frames, frame{seq: e.ServerSequence, ws: e.WorkspaceID, data: data})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range frames {
		for s := range b.subs[f.ws] {
			if f.seq <= s.from {
				continue
			}
			b.send(s, f)
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
		b.send(s, frame{data: data})
	}
}

func (b *broker) send(s *subscriber, f frame) {
	select {
	case s.queue <- f:
	default:
		s.fail()
	}
}
