package coord

import (
	"context"
	"time"
)

// Waiting for a claim (spec section 14): a claim made with a wait is
// queued on a conflict, and the call that made it waits, for a while, for
// the log to grant it.

// MaxCallWait bounds how long one call waits for a queued claim: agent
// clients give up on a tool call after a minute or two, progress or not.
const MaxCallWait = 50 * time.Second

// ProgressEvery is how often a waiting call reports progress.
const ProgressEvery = 5 * time.Second

// pollEvery is how often a waiting call reads the local copy of the log:
// other processes write the shared database (local mode), and the mirror
// moves with the service's fan-out (remote mode).
const pollEvery = 200 * time.Millisecond

// await waits up to d (from now) while res's claim is queued or pending,
// reading its state again (with ctx) as the log moves and when its
// scheduled grant or the end of its wait comes, calling progress every
// ProgressEvery. A cancelled waitCtx ends the wait (the claim stays
// queued) without an error.
func (c *Coordinator) await(waitCtx, ctx context.Context, res *ClaimResult, d time.Duration, progress func(time.Duration, *ClaimResult)) error {
	start := c.cfg.Now()
	until := start.Add(d)
	nextProgress := start.Add(ProgressEvery)
	lastPull := start
	for {
		now := c.cfg.Now()
		if !now.Before(until) {
			return nil
		}
		wake := min(until.Sub(now), pollEvery)
		if progress != nil && !now.Before(nextProgress) {
			progress(now.Sub(start), res)
			nextProgress = now.Add(ProgressEvery)
		}
		t := time.NewTimer(wake)
		select {
		case <-waitCtx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if c.rem != nil && (!c.rem.live.Load() || res.Status == "pending") && c.cfg.Now().Sub(lastPull) >= 2*time.Second {
			// No live fan-out to move the mirror, or the claim is not in
			// it yet: read the service's log.
			lastPull = c.cfg.Now()
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if err := c.rem.pull(pctx); err != nil {
				c.cfg.Logger.Debug("pull while waiting", "err", err)
			}
			cancel()
		}
		if err := c.decided(ctx, res); err != nil {
			return err
		}
		if res.Status != "queued" && res.Status != "pending" {
			return nil
		}
		if res.Status == "pending" && c.rem != nil && !c.rem.connected.Load() {
			// The service is unreachable: nothing will order the claim
			// while this call waits. It uploads when the service is back,
			// and its outcome comes in news.
			return nil
		}
	}
}

// told records what this session's tool result said of one of its
// claims, so that its news does not tell it again.
func (c *Coordinator) told(id, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.toldClaims == nil {
		c.toldClaims = map[string]string{}
	}
	if len(c.toldClaims) >= maxTold {
		clear(c.toldClaims) // at worst an outcome is told twice
	}
	c.toldClaims[id] = status
}

// maxTold bounds what told remembers.
const maxTold = 256
