package hub

import (
	"context"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Shared is implemented by a Store that several instances of the service
// share (PostgreSQL): an instance announces what it committed or changed,
// and hears what the others did, so their subscribers learn of it at once.
// Nothing depends on it for correctness: every instance also reads the
// heads of its subscribed workspaces every HeadCheckEvery, and reads the
// frames themselves from the log.
type Shared interface {
	// Announce tells the other instances, best effort, of moved heads
	// and presence changes.
	Announce(ctx context.Context, n store.Notice) error
	// Listen calls fn with every other instance's notices until ctx ends,
	// reconnecting as needed, and then returns.
	Listen(ctx context.Context, fn func(store.Notice))
}

// Connections is implemented by a Store that records which instance of
// the service holds each replica's subscriptions (both stores do): a
// replica goes offline when its last subscription on any instance ends,
// or when the instance that held it stops beating (killed, crashed, cut
// off) and the others (on SQLite, the next service on the file) see its
// heartbeat a TTL old, but not while another instance holds it.
type Connections interface {
	// Connected records that replica has a subscription on this instance.
	Connected(ctx context.Context, workspace, replica string) error
	// Heartbeat keeps this instance alive for the others and sets offline
	// the replicas only dead instances held, returning their presence;
	// takenForDead says the others had taken this instance for dead (a
	// long pause) and forgotten its subscriptions.
	Heartbeat(ctx context.Context) (gone []*protocol.RemotePresence, takenForDead bool, err error)
	// Reconnected records a subscription here again, after the instance
	// was taken for dead, and sets the replica online if it was set
	// offline meanwhile, returning its presence then (else nil).
	Reconnected(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error)
	// HeartbeatEvery is how often to call Heartbeat.
	HeartbeatEvery() time.Duration
}

// fanout runs the broker's background work: the catch-up loop that reads
// frames from the log, the periodic head check, and, over a Shared
// store, the announcer and the listener.
type fanout struct {
	s      *Server
	shared Shared // nil for a store of one instance

	mu       sync.Mutex
	heads    map[string]int64 // committed here, not yet announced
	presence []*protocol.RemotePresence
	kick     chan struct{}

	stop context.CancelFunc
	wg   sync.WaitGroup
}

func newFanout(s *Server, every time.Duration) *fanout {
	f := &fanout{s: s, heads: map[string]int64{}, kick: make(chan struct{}, 1)}
	f.shared, _ = s.store.(Shared)
	ctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	loops := []func(context.Context){f.catchUp, func(ctx context.Context) { f.checkHeads(ctx, every) }}
	if f.shared != nil {
		loops = append(loops, f.announcer, func(ctx context.Context) { f.shared.Listen(ctx, f.heard) })
	}
	if c, ok := s.store.(Connections); ok {
		loops = append(loops, func(ctx context.Context) { f.heartbeat(ctx, c) })
	}
	for _, loop := range loops {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			loop(ctx)
		}()
	}
	return f
}

// close stops the loops and waits for them.
func (f *fanout) close() {
	f.stop()
	f.wg.Wait()
}

// committed is the ingester's OnCommit: queue the frames here, and tell
// the other instances (after the commit, outside its transaction).
func (f *fanout) committed(logged []*protocol.Envelope) {
	f.s.broker.publish(logged)
	if f.shared == nil {
		return
	}
	f.mu.Lock()
	for _, e := range logged {
		f.heads[e.WorkspaceID] = max(f.heads[e.WorkspaceID], e.ServerSequence)
	}
	f.mu.Unlock()
	f.poke()
}

// presenceChanged queues a presence frame here and tells the others.
func (f *fanout) presenceChanged(ws string, p *protocol.RemotePresence) {
	f.s.broker.publishPresence(ws, p)
	if f.shared == nil {
		return
	}
	f.mu.Lock()
	f.presence = append(f.presence, p)
	f.mu.Unlock()
	f.poke()
}

func (f *fanout) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// announcer sends what was committed or changed since its last notice,
// coalesced: one notice per round, however many commits it covers.
func (f *fanout) announcer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		}
		f.mu.Lock()
		n := store.Notice{Heads: f.heads, Presence: f.presence}
		f.heads, f.presence = map[string]int64{}, nil
		f.mu.Unlock()
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := f.shared.Announce(actx, n); err != nil && ctx.Err() == nil {
			f.s.log.Warn("announce to the other instances (they catch up by their head check)", "err", err)
		}
		cancel()
	}
}

// heard takes another instance's notice.
func (f *fanout) heard(n store.Notice) {
	if len(n.Heads) > 0 {
		f.s.broker.heard(n.Heads)
	}
	for _, p := range n.Presence {
		f.s.broker.publishPresence(p.WorkspaceID, p)
	}
}

// heartbeat keeps this instance alive for the others and fans out the
// presence of the replicas that went offline with a dead instance.
func (f *fanout) heartbeat(ctx context.Context, c Connections) {
	every := c.HeartbeatEvery()
	for {
		hctx, cancel := context.WithTimeout(ctx, max(every, time.Second))
		gone, taken, err := c.Heartbeat(hctx)
		if err != nil && ctx.Err() == nil {
			f.s.log.Warn("heartbeat", "err", err)
		}
		if taken {
			// The others forgot this instance's subscriptions, and may
			// have set its replicas offline: they are still here.
			f.s.log.Warn("this instance missed its heartbeats and was taken for dead: recording its subscriptions again")
			for _, sub := range f.s.broker.connections() {
				p, err := c.Reconnected(hctx, sub[0], sub[1])
				if err != nil {
					f.s.log.Warn("record a subscription again", "workspace", sub[0], "replica", sub[1], "err", err)
				} else if p != nil {
					gone = append(gone, p)
				}
			}
		}
		cancel()
		for _, p := range gone {
			f.presenceChanged(p.WorkspaceID, p)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// checkHeads reads the heads of the workspaces with subscribers here
// every interval, covering a lost notice or a dropped listener.
func (f *fanout) checkHeads(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wss := f.s.broker.followed()
		if len(wss) == 0 {
			continue
		}
		heads, err := f.s.store.Heads(ctx, wss)
		if err != nil {
			if ctx.Err() == nil {
				f.s.log.Warn("head check", "err", err)
			}
			continue
		}
		f.s.broker.heard(heads)
	}
}

// catchUpPage is how many frames the catch-up loop reads at once.
const catchUpPage = 500

// catchUp reads, for every workspace with subscribers that is behind its
// known head, the missing frames from the log and queues them.
func (f *fanout) catchUp(ctx context.Context) {
	b := f.s.broker
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		failed := map[string]bool{}
		for ctx.Err() == nil {
			ws, pub, known, firstHeld, ok := b.lagging(failed)
			if !ok {
				break
			}
			limit := int(min(known-pub, catchUpPage))
			if firstHeld > pub+1 {
				limit = int(min(int64(limit), firstHeld-pub-1)) // what is held is not read again
			}
			p, err := f.s.store.Page(ctx, store.PageQuery{Workspace: ws, After: pub, Limit: max(limit, 1)})
			switch {
			case err != nil:
				if ctx.Err() == nil {
					f.s.log.Warn("fan-out: read the log", "workspace", ws, "after", pub, "err", err)
				}
				failed[ws] = true // retried at the next wake or head check
			case p.TooOld:
				b.lost(ws, p.ResyncFrom)
			case len(p.Ops) == 0:
				// The head was heard of, but the log does not reach it
				// (a notice ahead of its commit's visibility): wait.
				failed[ws] = true
			default:
				frames := b.framesOf(p.Ops)
				if len(frames) == 0 {
					b.lost(ws, p.Ops[0].Seq)
					continue
				}
				b.caughtUp(ws, frames)
			}
		}
	}
}
