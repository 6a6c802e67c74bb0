package coord

import (
	"context"
	"testing"
	"time"
)

// TestRemoteClaimWaits: in remote mode a claim that waits is queued by the
// service's log, its call waits with the mirror, reporting progress, and
// is granted in that call when the holder releases; when the service is
// unreachable the call does not wait for nothing: it answers pending at
// once, likely queued.
func TestRemoteClaimWaits(t *testing.T) {
	ctx := context.Background()
	h, token := startStoppableHub(t)
	url := "http://" + h.addr
	ada, bo := remoteCoord(t, url, token, "ada@example.com"), remoteCoord(t, url, token, "bo@example.com")
	held, err := ada.Claim(ctx, []string{"src/boss.gd"}, true, "phase 2", time.Hour, "")
	if err != nil || held.Status != "granted" {
		t.Fatalf("ada's claim: %+v %v", held, err)
	}
	type outcome struct {
		res      *ClaimResult
		err      error
		progress int
	}
	done := make(chan outcome, 1)
	go func() {
		progress := 0
		res, err := bo.Request(ctx, ClaimRequest{Patterns: []string{"src/boss.gd"}, Exclusive: true, TTL: 10 * time.Minute,
			Wait: 10 * time.Minute, CallWait: 45 * time.Second, Progress: func(time.Duration, *ClaimResult) { progress++ }})
		done <- outcome{res, err, progress}
	}()
	// ada releases once bo waits for her claim (her replica sees it).
	waitUntil(t, func() bool {
		st, err := ada.Status(ctx)
		return err == nil && len(st.Queues[held.Claim.ID]) == 1
	})
	time.Sleep(ProgressEvery + time.Second) // bo's call reports progress meanwhile
	if _, err := ada.Release(ctx, []string{held.Claim.ID}, false, "done"); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("bo's waiting call did not answer after the release")
	}
	if o.err != nil || o.res.Status != "granted" || !o.res.Waited || o.progress == 0 {
		t.Fatalf("bo's waiting claim: %+v, %v, %d progress reports", o.res, o.err, o.progress)
	}
	if want := o.res.GrantedAt.Add(10 * time.Minute); !o.res.ExpiresAt.Equal(want) {
		t.Fatalf("lease to %s, want %s (from the grant)", o.res.ExpiresAt, want)
	}

	// The service goes down; cy's mirror has bo's claim: the call does
	// not wait its 45 s for nothing.
	cy := remoteCoord(t, url, token, "cy@example.com")
	waitUntil(t, func() bool {
		cs, err := cy.CheckConflicts(ctx, []string{"src/boss.gd"})
		return err == nil && len(cs.Claims) == 1
	})
	h.stop()
	start := time.Now()
	res, err := cy.Request(ctx, ClaimRequest{Patterns: []string{"src/boss.gd"}, Exclusive: true, Wait: 10 * time.Minute, CallWait: 45 * time.Second})
	if err != nil || res.Status != "pending" || res.Likely != "queued" {
		t.Fatalf("claim while the service is down: %+v %v", res, err)
	}
	if d := time.Since(start); d >= 45*time.Second {
		t.Fatalf("the call waited its whole wait (%v) for a service that is down", d)
	}
}
