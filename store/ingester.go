package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// ErrClosed is returned by an Ingester that is shutting down.
var ErrClosed = errors.New("ingester closed")

// IngesterOptions configure NewIngester. A nil *IngesterOptions means the defaults.
type IngesterOptions struct {
	// MaxBatch is the most envelopes one commit carries. Default 512.
	MaxBatch int
	// GatherWait is the longest the writer waits for concurrent callers to
	// fill a batch as large as recent ones. Default 150µs; negative: never wait.
	GatherWait time.Duration
	// OnCommit, if set, receives the envelopes each commit logged, in
	// server order, on the writer goroutine, right after the commit and
	// before any of their callers get their receipts. It must not block.
	OnCommit func(logged []*protocol.Envelope)
}

// Ingester turns concurrent Ingest calls into shared commits (group
// commit): while one transaction commits, the next batch gathers, so one
// fsync acknowledges many envelopes. Every answer is given after its
// envelope is durable.
type Ingester struct {
	s        *Store
	maxBatch int
	wait     time.Duration
	onCommit func([]*protocol.Envelope)

	in   chan *pending
	mu   sync.RWMutex // guards closed against sends on a closed channel
	shut bool
	done chan struct{}
}

type pending struct {
	ctx  context.Context
	item Item
	res  Result
	err  error
	done chan struct{}
}

// NewIngester starts an ingester over s. Close it before closing s.
func (s *Store) NewIngester(opts *IngesterOptions) *Ingester {
	in := &Ingester{s: s, maxBatch: 512, wait: 150 * time.Microsecond, done: make(chan struct{})}
	if opts != nil {
		if opts.MaxBatch > 0 {
			in.maxBatch = opts.MaxBatch
		}
		if opts.GatherWait != 0 {
			in.wait = max(opts.GatherWait, 0)
		}
		in.onCommit = opts.OnCommit
	}
	in.in = make(chan *pending, in.maxBatch)
	go in.loop()
	return in
}

// Ingest logs one validated envelope into workspace and returns its
// result once it is durable. The error is for infrastructure failures
// (database, shutdown); rule refusals are in Result.Err.
func (in *Ingester) Ingest(ctx context.Context, workspace string, e *protocol.Envelope) (Result, error) {
	p := &pending{ctx: ctx, item: Item{Workspace: workspace, Envelope: e}, done: make(chan struct{})}
	// Encoding and hashing happen here, on the caller's goroutine, so the
	// single writer spends its time on the database alone.
	if err := p.item.prepare(); err != nil {
		return Result{Err: err}, nil
	}
	in.mu.RLock()
	if in.shut {
		in.mu.RUnlock()
		return Result{}, ErrClosed
	}
	select {
	case in.in <- p:
		in.mu.RUnlock()
	case <-ctx.Done():
		in.mu.RUnlock()
		return Result{}, ctx.Err()
	}
	// Once queued, the envelope is decided even if ctx ends: the caller may
	// go, but a retry must find the same outcome.
	<-p.done
	return p.res, p.err
}

// Close stops taking envelopes, finishes every queued one, and returns
// once the last commit is done.
func (in *Ingester) Close() error {
	in.mu.Lock()
	if !in.shut {
		in.shut = true
		close(in.in)
	}
	in.mu.Unlock()
	<-in.done
	return nil
}

func (in *Ingester) loop() {
	defer close(in.done)
	batch := make([]*pending, 0, in.maxBatch)
	items := make([]Item, 0, in.maxBatch)
	target := 1.0
	for {
		p, ok := <-in.in
		if !ok {
			return
		}
		batch = append(batch[:0], p)
		batch = in.gather(batch, &target)
		items = items[:0]
		for _, p := range batch {
			items = append(items, p.item)
		}
		results, err := in.s.IngestBatch(context.Background(), items)
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
		for i, p := range batch {
			if err != nil {
				p.err = err
			} else {
				p.res = results[i]
			}
			close(p.done)
		}
	}
}

// gather adds to batch what is queued. Concurrent callers resubmit a few
// microseconds after their previous commit, so taking only what is queued
// splits them into two alternating half-size batches. When recent batches
// were larger than what is queued now, gather waits up to GatherWait for
// the rest, like PostgreSQL's commit_delay with commit_siblings: a lone
// sequential caller (recent batches of one) never waits.
func (in *Ingester) gather(batch []*pending, target *float64) []*pending {
	drain := func() bool {
		for len(batch) < in.maxBatch {
			select {
			case p, ok := <-in.in:
				if !ok {
					return false
				}
				batch = append(batch, p)
			default:
				return true
			}
		}
		return true
	}
	open := drain()
	if open && float64(len(batch)) < *target && in.wait > 0 {
		timer := time.NewTimer(in.wait)
	wait:
		for float64(len(batch)) < *target && len(batch) < in.maxBatch {
			select {
			case p, ok := <-in.in:
				if !ok {
					break wait
				}
				batch = append(batch, p)
			case <-timer.C:
				break wait
			}
		}
		timer.Stop()
	}
	// The target follows the largest recent batch and decays when callers leave.
	*target = max(float64(len(batch)), *target*0.9)
	return batch
}
