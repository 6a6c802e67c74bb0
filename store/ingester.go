package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// ErrClosed is returned by an Ingester that is shutting down.
var ErrClosed = errors.New("ingester closed")

// IngesterOptions configure NewIngester. A nil *IngesterOptions means the defaults.
type IngesterOptions struct {
	// MaxBatch is the most envelopes one commit carries. Default 512.
	MaxBatch int
	// GatherWait is the longest a committing caller waits for concurrent
	// callers to fill a batch as large as recent ones. Default (zero):
	// adaptive, a third of the recent commit time, between 50µs and 1ms;
	// negative: never wait.
	GatherWait time.Duration
	// OnCommit, if set, receives the envelopes each commit logged, in
	// server order, once they are durable and before any of their callers
	// get their receipts. It must not block.
	OnCommit func(logged []*protocol.Envelope)
}

// Ingester turns concurrent Ingest calls into shared commits (group
// commit). It has no goroutine of its own (the LevelDB writer-queue
// design): the first caller to find no commit in progress becomes the
// leader, takes every queued envelope as one batch, commits it (durably),
// hands the leader role to the first caller that queued meanwhile, and
// answers its batch. Under load one commit and one flush serve many
// callers; a lone caller commits on its own goroutine with no hand-off.
// Every answer is given after its envelope is durable.
type Ingester struct {
	commit   BatchFunc
	maxBatch int
	wait     time.Duration
	onCommit func([]*protocol.Envelope)

	batches, envelopes atomic.Int64
	busy               atomic.Int64 // nanoseconds spent committing

	adaptive bool    // wait follows the commit time
	commitNs float64 // recent commit time, nanoseconds (moving average)

	mu      sync.Mutex
	queue   []*pending // waiting for a commit, in arrival order
	leading bool       // a leader is committing
	shut    bool
	target  float64       // recent batch size, for the gather wait
	arrived chan struct{} // pinged on every arrival, for the gather wait
	calls   sync.WaitGroup
}

type pending struct {
	item Item
	res  Result
	err  error
	lead bool          // set under Ingester.mu before wake is signalled
	wake chan struct{} // lead role or answer
}

// BatchFunc commits a batch of items in one durable transaction, deciding
// each in order (as (*Store).IngestBatch does); the error is for the
// database only, and then none of the batch was committed, or the outcome
// is unknown: it is never acknowledged.
type BatchFunc func(ctx context.Context, items []Item) ([]Result, error)

// NewIngester returns an ingester over s. Close it before closing s.
func (s *Store) NewIngester(opts *IngesterOptions) *Ingester {
	return NewGroupIngester(s.IngestBatch, opts)
}

// NewGroupIngester returns an ingester whose commits go through commit:
// the group commit of any store.
func NewGroupIngester(commit BatchFunc, opts *IngesterOptions) *Ingester {
	in := &Ingester{commit: commit, maxBatch: 512, wait: minGather, adaptive: true, target: 1, arrived: make(chan struct{}, 1)}
	if opts != nil {
		if opts.MaxBatch > 0 {
			in.maxBatch = opts.MaxBatch
		}
		if opts.GatherWait != 0 {
			in.wait, in.adaptive = max(opts.GatherWait, 0), false
		}
		in.onCommit = opts.OnCommit
	}
	return in
}

// Ingest logs one validated envelope into workspace and returns its
// result once it is durable. The error is for infrastructure failures
// (database, shutdown); rule refusals are in Result.Err. Once queued, the
// envelope is decided even if ctx ends, so a retry finds the same outcome.
func (in *Ingester) Ingest(ctx context.Context, workspace string, e *protocol.Envelope) (Result, error) {
	return in.IngestItem(ctx, Item{Workspace: workspace, Envelope: e})
}

// IngestItem is Ingest for an Item, for NextSequence.
func (in *Ingester) IngestItem(ctx context.Context, it Item) (Result, error) {
	p := &pending{item: it, wake: make(chan struct{}, 1)}
	// Encoding and hashing happen before the queue, in parallel (for a
	// NextSequence item, in the commit: its clientSequence is not known yet).
	if err := p.item.PrepareEarly(); err != nil {
		return Result{Err: err}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	in.mu.Lock()
	if in.shut {
		in.mu.Unlock()
		return Result{}, ErrClosed
	}
	in.calls.Add(1)
	defer in.calls.Done()
	in.queue = append(in.queue, p)
	lead := !in.leading
	in.leading = true
	in.mu.Unlock()
	select {
	case in.arrived <- struct{}{}:
	default:
	}
	for {
		if !lead {
			<-p.wake // the lead role, or the answer
			in.mu.Lock()
			lead, p.lead = p.lead, false
			in.mu.Unlock()
			if !lead {
				return p.res, p.err
			}
		}
		lead = false
		// Our own envelope is in the batch we lead: its answer wakes us.
		in.commitBatch()
	}
}

// commitBatch runs as the leader: it takes the queue as one batch,
// commits it durably, passes the lead on and answers it. Callers that
// arrive meanwhile queue up, so under load each commit serves many of them.
func (in *Ingester) commitBatch() {
	in.mu.Lock()
	in.gather()
	n := min(len(in.queue), in.maxBatch)
	batch := make([]*pending, n)
	copy(batch, in.queue)
	in.queue = append(in.queue[:0], in.queue[n:]...)
	in.mu.Unlock()

	items := make([]Item, n)
	for i, p := range batch {
		items[i] = p.item
	}
	start := time.Now()
	results, err := in.commit(context.Background(), items)
	took := time.Since(start)
	in.busy.Add(int64(took))
	in.batches.Add(1)
	in.envelopes.Add(int64(n))

	if err == nil && in.onCommit != nil {
		var logged []*protocol.Envelope
		for _, r := range results {
			if r.Logged != nil {
				logged = append(logged, r.Logged)
			}
		}
		if len(logged) > 0 {
			in.onCommit(logged)
		}
	}
	// Pass the lead before answering, so the next batch starts at once.
	in.mu.Lock()
	// This batch and those that queued during it are the callers active
	// now; the next leader waits briefly for this batch's callers to come
	// back. The estimate decays when callers leave.
	in.target = max(float64(n+len(in.queue)), in.target*0.9)
	if in.adaptive {
		// Waiting a third of a commit for callers that are on their way
		// back costs less than committing without them: measured over
		// HTTP with 16 clients, a fixed 100µs gave batches of 8.5, a third
		// of the commit time batches of 13-15 and 10 % more throughput;
		// a whole commit time lost throughput to the wait itself.
		in.commitNs = 0.8*in.commitNs + 0.2*float64(took)
		in.wait = min(max(time.Duration(in.commitNs/3), minGather), maxGather)
	}
	if len(in.queue) > 0 {
		next := in.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		in.leading = false
	}
	in.mu.Unlock()
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.res = results[i]
		}
		p.wake <- struct{}{}
	}
}

// gather waits, with in.mu held, up to GatherWait for concurrent callers
// when recent batches were larger than the queue: those callers resubmit a
// moment after their previous answer, and taking only what is queued would
// split them into alternating half-size batches (PostgreSQL's commit_delay
// with commit_siblings). A lone caller (recent batches of one) never waits.
func (in *Ingester) gather() {
	if in.wait <= 0 || float64(len(in.queue)) >= in.target {
		return
	}
	deadline := time.Now().Add(in.wait)
	for float64(len(in.queue)) < in.target && len(in.queue) < in.maxBatch {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		in.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-in.arrived:
		case <-t.C:
		}
		t.Stop()
		in.mu.Lock()
	}
}

// The adaptive gather wait's bounds.
const (
	minGather = 50 * time.Microsecond
	maxGather = time.Millisecond
)

// IngesterStats are an Ingester's running totals.
type IngesterStats struct {
	Batches   int64         // commits
	Envelopes int64         // envelopes decided (logged, duplicate or refused)
	Busy      time.Duration // time spent committing
}

// Stats returns the running totals.
func (in *Ingester) Stats() IngesterStats {
	return IngesterStats{Batches: in.batches.Load(), Envelopes: in.envelopes.Load(), Busy: time.Duration(in.busy.Load())}
}

// Close stops taking envelopes and returns once every queued one is
// durable and answered.
func (in *Ingester) Close() error {
	in.mu.Lock()
	in.shut = true
	in.mu.Unlock()
	in.calls.Wait()
	return nil
}

// Notice is what one instance of the service tells the others that share
// its database: the workspaces whose heads moved (to at least the given
// serverSequence, committed) and presence changes. Notices are hints: a
// lost one delays fan-out until the next head check, nothing more.
type Notice struct {
	Heads    map[string]int64           `json:"h,omitempty"`
	Presence []*protocol.RemotePresence `json:"p,omitempty"`
}
