package coord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/queuemodel"
	"github.com/crosscode/crosscode-mcp/internal/testing/storetest"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// stoppableHub is a coordination service that stops and starts again on
// the same address and database.
type stoppableHub struct {
	st     *store.Store
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *stoppableHub) start(t *testing.T) {
	t.Helper()
	var l net.Listener
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l, err = net.Listen("tcp", h.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the service's address: %v", err)
	}
	h.addr = l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func(done chan struct{}) { hub.New(hub.Config{Store: h.st}).Serve(ctx, l); close(done) }(h.done)
}

// startStoppableHub starts a service over a new database with the
// workspace mygame; it stops with the test. token is mygame's.
func startStoppableHub(t *testing.T) (h *stoppableHub, token string) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if token, err = st.CreateToken(context.Background(), "mygame", ""); err != nil {
		t.Fatal(err)
	}
	h = &stoppableHub{st: st, addr: "127.0.0.1:0"}
	h.start(t)
	t.Cleanup(h.stop)
	return h, token
}

func (h *stoppableHub) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// TestRandomClaimsAcrossServiceRestarts is issue 20's scenario: four agents
// claim and release at random while the service stops and starts again
// under them. An agent's release of a claim it was answered (granted or
// pending) never says the claim does not exist; a denied one answers it
// was denied. Once the service stays up, every agent's own claims are
// exactly those the log holds active for it.
func TestRandomClaimsAcrossServiceRestarts(t *testing.T) {
	ctx := context.Background()
	h, token := startStoppableHub(t)
	hubSt, url := h.st, "http://"+h.addr

	var agents []*Coordinator
	for i := range 4 {
		actor := fmt.Sprintf("agent%d@example.com", i)
		st, err := store.Open(ctx, filepath.Join(t.TempDir(), "replica.db"), &store.Options{Projections: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{Workspace: "mygame", Store: st, Service: url, Token: token, Actor: actor, Replica: "rep_" + actor, Session: "ses_" + actor,
			AckWait: 300 * time.Millisecond, HTTPTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx); st.Close() })
		agents = append(agents, c)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ops, releases, notFound int
	for i, c := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 20))
			var mine []string // claims answered granted or pending, not released yet
			for {
				select {
				case <-stop:
					return
				default:
				}
				if len(mine) == 0 || rng.IntN(5) < 3 {
					// Half of the claims wait their turn (issue 24), for
					// half an hour or an hour; the calls do not wait.
					var wait time.Duration
					if rng.IntN(2) == 0 {
						wait = time.Duration(1+rng.IntN(2)) * 30 * time.Minute
					}
					res, err := c.Request(ctx, ClaimRequest{Patterns: []string{fmt.Sprintf("dir%d/**", rng.IntN(8))}, Exclusive: true, TTL: time.Hour, Wait: wait})
					if err != nil {
						t.Errorf("%s: claim: %v", c.Actor(), err)
						return
					}
					if res.Status == "denied" {
						r, err := c.Release(ctx, []string{res.Claim.ID}, false, "")
						if err != nil || len(r.Unchanged) != 1 || r.Unchanged[0].Status != store.ClaimDenied {
							t.Errorf("%s: releasing a denied claim: %+v %v", c.Actor(), r, err)
							return
						}
					} else {
						mine = append(mine, res.Claim.ID)
					}
				} else {
					k := rng.IntN(len(mine))
					id := mine[k]
					mine = slices.Delete(mine, k, k+1)
					r, err := c.Release(ctx, []string{id}, false, "")
					var ie *InputError
					if errors.As(err, &ie) {
						mu.Lock()
						notFound++
						mu.Unlock()
						t.Errorf("%s: releasing its own claim %s: %v", c.Actor(), id, err)
						continue
					}
					if err != nil {
						t.Errorf("%s: release: %v", c.Actor(), err)
						return
					}
					// Released, or (pending, then denied by the log) unchanged.
					if len(r.Released)+len(r.Unchanged) != 1 {
						t.Errorf("%s: release of %s: %+v", c.Actor(), id, r)
					}
					mu.Lock()
					releases++
					mu.Unlock()
				}
				mu.Lock()
				ops++
				mu.Unlock()
			}
		}()
	}
	for range 6 {
		time.Sleep(150 * time.Millisecond)
		h.stop()
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
		h.start(t)
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d operations, %d releases of own claims, %d of them refused as unknown", ops, releases, notFound)

	// The service stays up: every outbox drains, every mirror catches up,
	// and each agent's claims are the log's.
	drainStart := time.Now()
	for _, c := range agents {
		waitUntil(t, func() bool {
			c.rem.wake(c.rem.kick)
			c.rem.wake(c.rem.poke)
			own, err := c.ownWrites(ctx)
			return err == nil && own == nil
		})
	}
	t.Logf("every outbox drained and mirrored %v after the last restart", time.Since(drainStart))
	head, err := hubSt.Head(ctx, "mygame")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range agents {
		waitUntil(t, func() bool {
			c.rem.wake(c.rem.poke)
			h, err := c.Head(ctx)
			return err == nil && h >= head
		})
	}
	for _, c := range agents {
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range st.MyClaims {
			if e.Status != store.ClaimActive && e.Status != store.ClaimQueued {
				t.Errorf("%s: claim %s is %s once everything is mirrored", c.Actor(), e.ID, e.Status)
			}
			got = append(got, e.ID)
		}
		var want []string
		list, err := agents[0].cfg.Store.Entities(ctx, store.EntityQuery{Workspace: "mygame", Kind: protocol.KindClaim, Actor: c.Actor(), Status: []string{store.ClaimActive, store.ClaimQueued}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			want = append(want, e.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s's claims: %v, the log's: %v", c.Actor(), got, want)
		}
	}

	// The grants, recomputed from the service's log by the model, are
	// every replica's, now and as leases and waits run out later.
	log := storetest.PageLog(t, hubSt, "mygame")
	m := queuemodel.Replay(log)
	totals := map[string]int{}
	end := *log[len(log)-1].IngestedAt
	for _, c := range agents {
		for _, d := range []time.Duration{0, 45 * time.Minute, 3 * time.Hour} {
			queuemodel.Compare(t, c.cfg.Store, "mygame", m.Clone(), len(log), end.Add(d), totals)
		}
	}
	t.Logf("every replica's claims agree with the model: %v", totals)
	if totals["queued"] == 0 || totals["late grant"] == 0 {
		t.Errorf("no claim waited, or none was granted after waiting: %v", totals)
	}
}
