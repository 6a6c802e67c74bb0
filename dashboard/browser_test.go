package dashboard_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/internal/testing/browsertest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// team is the seeded workspace of the browser tests: three agents on a
// game, with one of everything the dashboard shows.
type team struct {
	alice, bob, carol *agent
	aliceClaim        *protocol.Envelope
}

func seed(t testing.TB, s *service) *team {
	t.Helper()
	tm := &team{
		alice: newAgent("rep-alice", "alice@studio.dev", protocol.ProviderClaude),
		bob:   newAgent("rep-bob", "bob@studio.dev", protocol.ProviderCodex),
		carol: newAgent("rep-carol", "carol@studio.dev", protocol.ProviderCursor),
	}
	s.presence(t, tm.alice, protocol.PresenceOnline)
	s.presence(t, tm.bob, protocol.PresenceOnline)
	s.presence(t, tm.carol, protocol.PresenceIdle)
	tm.aliceClaim = tm.alice.claim("clm-alice-physics", true, "rewriting the physics step", "src/physics/**")
	var h *protocol.Envelope
	s.ingest(t,
		tm.aliceClaim,
		tm.bob.claim("clm-bob-ui", false, "HUD tweaks", "src/ui/*.gd", "assets/ui/**"),
		tm.bob.claim("clm-bob-gravity", false, "tune gravity", "src/physics/gravity.gd"), // denied: alice's is exclusive
		tm.alice.intent("int-alice", "make the jump feel snappier", "src/physics/jump.gd", "src/player/*.gd"),
		tm.carol.intent("int-carol", "level 3 layout", "levels/level3.tscn"),
		tm.alice.task("tsk-jump", "Jump feels floaty", protocol.TaskInProgress, "alice@studio.dev", "feel"),
		tm.bob.task("tsk-hud", "Score panel overlaps the minimap", protocol.TaskOpen, "", "ui", "bug"),
		tm.carol.task("tsk-l3", "Level 3 needs a checkpoint", protocol.TaskBlocked, "carol@studio.dev"),
		tm.alice.task("tsk-title", "Title screen music", protocol.TaskDone, "bob@studio.dev"),
		func() *protocol.Envelope {
			h = tm.bob.handoff("hof-ui", "carol@studio.dev", "HUD layout is half done; finish the score panel")
			return h
		}(),
		tm.bob.handoff("hof-save", "alice@studio.dev", "save format v2 migration"),
		tm.alice.validation("val-1", "go test ./...", protocol.ValidationPassed, "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "212 tests"),
		tm.alice.validation("val-2", "scenario jump_height", protocol.ValidationFailed, "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "peak 2.9 m, wanted 3.2 m"),
		tm.bob.validation("val-3", "lint", protocol.ValidationPassed, "e83c5163316f89bfbde7d9ab23ca2e25604af290", ""),
		tm.bob.transaction("txn-1", "HUD: move the score panel", "src/ui/hud.gd", "assets/ui/hud.png"),
	)
	s.ingest(t, tm.carol.answer(h, protocol.HandoffAccepted, "on it"))
	return tm
}

// open loads the page and signs in with token.
func open(t *testing.T, b *browsertest.Browser, url, token string) {
	t.Helper()
	b.Must(chromedp.Navigate(url))
	b.WaitTrue(wait, `!document.getElementById('login').hidden`)
	b.Must(chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login-form button")))
}

// view switches to a view by its number key and waits for its tab.
func view(t *testing.T, b *browsertest.Browser, key, name string) {
	t.Helper()
	b.Must(chromedp.KeyEvent(key))
	b.WaitTrue(wait, fmt.Sprintf(`location.hash === '#%s' && document.querySelector('a[data-view=%q]').getAttribute('aria-current') === 'page' && dashboardStats.draws.at(-1).view === %[1]q`, name, name))
}

// mainText is the text of the main area.
func mainText(b *browsertest.Browser) string {
	return browsertest.Eval[string](b, `document.getElementById('main').innerText`)
}

func wantText(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("page does not show %q; it shows:\n%s", w, got)
		}
	}
}

// TestServiceDashboard drives the page `serve` offers at / in headless
// Chromium: sign-in, every view over a seeded workspace, live updates
// without a reload, presence, light and dark, and keyboard navigation.
func TestServiceDashboard(t *testing.T) {
	s := newService(t, nil)
	tm := seed(t, s)
	b := browsertest.New(t, 1280, 900)
	shots := browsertest.ArtifactDir(t)

	open(t, b, s.URL+"/", s.Token)
	b.WaitTrue(wait, `document.querySelector('#live').dataset.state === 'live'`)
	if got := browsertest.Eval[string](b, `sessionStorage.getItem('crosscode.token')`); got != s.Token {
		t.Errorf("token in sessionStorage = %q, want the token", got)
	}
	if got := browsertest.Eval[string](b, `localStorage.length + ' ' + document.cookie`); got != "0 " {
		t.Errorf("the token must live in sessionStorage only; localStorage/cookies: %q", got)
	}

	// Agents.
	b.WaitTrue(wait, `document.querySelectorAll('tr[data-replica]').length === 3`)
	wantText(t, mainText(b), "alice@studio.dev", "claude-code", "codex", "cursor", "sref_rep-alice", "idle", "online")
	b.Screenshot(shots, "agents")

	// Claims and intents.
	view(t, b, "2", "claims")
	b.WaitTrue(wait, `document.querySelectorAll('tr[data-claim]').length === 2`)
	wantText(t, mainText(b), "src/physics/**", "exclusive", "shared", "rewriting the physics step", "make the jump feel snappier", "levels/level3.tscn")
	// Carol accepted bob's handoff (it moved no claims); bob still holds his.
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-claim="clm-bob-ui"]').innerText`), "bob@studio.dev", "src/ui/*.gd", "assets/ui/**")
	// Bob's claim on alice's exclusive paths was denied: it shows as a
	// denial alice's claim caused, not as an active claim.
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-claim="clm-alice-physics"]').innerText`), "1 (bob@studio.dev)")
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-denied="clm-bob-gravity"]').innerText`), "src/physics/gravity.gd", "alice@studio.dev (exclusive)")
	b.Screenshot(shots, "claims")

	view(t, b, "3", "handoffs")
	wantText(t, mainText(b), "save format v2 migration", "HUD layout is half done", "accepted", "on it")
	b.Screenshot(shots, "handoffs")

	view(t, b, "4", "tasks")
	for st, title := range map[string]string{"open": "Score panel overlaps the minimap", "in progress": "Jump feels floaty", "blocked": "Level 3 needs a checkpoint", "done": "Title screen music"} {
		got := browsertest.Eval[string](b, fmt.Sprintf(`document.querySelector('section.column[aria-label=%q]').innerText`, st))
		wantText(t, got, title)
	}
	b.Screenshot(shots, "tasks")

	view(t, b, "5", "validations")
	wantText(t, mainText(b), "4b825dc642cb", "1 passed", "1 failed", "scenario jump_height", "peak 2.9 m", "e83c5163316f")
	b.Screenshot(shots, "validations")

	view(t, b, "6", "feed")
	wantText(t, mainText(b), "claim.created", "handoff.responded", "transaction.created", "HUD: move the score panel")
	// The feed's kind filter hides what is unticked.
	b.Click("#kind-claim")
	b.WaitTrue(wait, `![...document.querySelectorAll('#main td')].some((td) => td.innerText === 'claim.created')`)
	b.Click("#kind-claim")
	b.Screenshot(shots, "feed")

	// Live: a claim ingested now appears without a reload; its release
	// removes it.
	view(t, b, "2", "claims")
	browsertest.Eval[bool](b, `window.sameDocument = true`)
	late := tm.carol.claim("clm-carol-late", true, "checkpoint placement", "levels/level3.tscn")
	start := time.Now()
	s.ingest(t, late)
	b.WaitTrue(wait, `document.querySelector('tr[data-claim="clm-carol-late"]') !== null`)
	t.Logf("a claim ingested later was drawn %v after its ingest was sent", time.Since(start).Round(time.Millisecond))
	if !browsertest.Eval[bool](b, `window.sameDocument === true`) {
		t.Error("the page reloaded to show the new claim")
	}
	s.ingest(t, tm.carol.release(late))
	b.WaitTrue(wait, `document.querySelector('tr[data-claim="clm-carol-late"]') === null`)

	// Claims that wait their turn: in the holder's queue, in line, and in
	// their own table, not as active claims; when the holder releases, the
	// first in line holds the paths, with a lease from the grant.
	s.ingest(t, tm.bob.waitingClaim("clm-bob-wait", "tune gravity after the rewrite", 10*time.Minute, "src/physics/gravity.gd"))
	s.ingest(t, tm.carol.waitingClaim("clm-carol-wait", "physics of the checkpoints", 10*time.Minute, "src/physics/*.gd"))
	b.WaitTrue(wait, `document.querySelectorAll('tr[data-waiting]').length === 2`)
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-claim="clm-alice-physics"]').innerText`), "1. bob@studio.dev", "2. carol@studio.dev")
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-waiting="clm-carol-wait"]').innerText`), "src/physics/*.gd", "2", "alice@studio.dev (holds)", "bob@studio.dev (waiting ahead)", "physics of the checkpoints")
	if browsertest.Eval[bool](b, `document.querySelector('tr[data-claim="clm-bob-wait"]') !== null`) {
		t.Error("a waiting claim shows as active")
	}
	b.Screenshot(shots, "claims-waiting")
	s.ingest(t, tm.alice.release(tm.aliceClaim))
	b.WaitTrue(wait, `document.querySelector('tr[data-claim="clm-bob-wait"]') !== null && document.querySelectorAll('tr[data-waiting]').length === 1`)
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-claim="clm-bob-wait"]').innerText`), "1. carol@studio.dev")

	// Presence changes show.
	view(t, b, "1", "agents")
	s.presence(t, tm.bob, protocol.PresenceOffline)
	b.WaitTrue(wait, `document.querySelector('tr[data-replica="rep-bob"]').dataset.status === 'offline'`)

	// Dark.
	b.ColorScheme("dark")
	if bg := browsertest.Eval[string](b, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(15, 18, 23)" {
		t.Errorf("dark background = %s", bg)
	}
	view(t, b, "2", "claims")
	b.Screenshot(shots, "claims-dark")
	b.ColorScheme("light")

	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("screenshots in %s", shots)
}

// TestHostileText ingests what a malicious agent or game might write:
// markup, scripts, javascript: links and bidi controls. The page shows it
// as text and runs nothing.
func TestHostileText(t *testing.T) {
	s := newService(t, nil)
	mal := newAgent("rep-mal", "mallory@evil.example", protocol.ProviderUnknown)
	s.presence(t, mal, protocol.PresenceOnline)
	img := `<img src=x onerror="window.pwned=1">`
	script := `<script>window.pwned=2</script>`
	link := `javascript:window.pwned=3`
	bidi := "invoice\u202Egnp.exe"
	s.ingest(t,
		mal.claim("clm-evil", true, img, "src/"+"<b>bold</b>/**"),
		mal.intent("int-evil", script, "a.txt"),
		mal.task("tsk-evil", bidi, protocol.TaskOpen, "", "<i>label</i>"))
	h := mal.handoff("hof-evil", "alice", `<a href="javascript:window.pwned=4">click</a>`)
	h.Handoff().Notes = link
	h.Handoff().Branch = link
	s.ingest(t, h, mal.validation("val-evil", "<svg onload=window.pwned=5>", protocol.ValidationFailed, "", link))
	b := browsertest.New(t, 1280, 900)
	shots := browsertest.ArtifactDir(t)
	open(t, b, s.URL+"/", s.Token)
	b.WaitTrue(wait, `document.querySelector('#live').dataset.state === 'live'`)
	check := func(name string, want ...string) {
		t.Helper()
		got := mainText(b)
		wantText(t, got, want...)
		if n := browsertest.Eval[int](b, `document.querySelectorAll('#main img, #main script, #main svg, #main b, #main i, #main a[href^="javascript"], #main [onerror], #main [onload]').length`); n != 0 {
			t.Errorf("%s: %d elements made from agent text", name, n)
		}
		if p := browsertest.Eval[any](b, `window.pwned ?? null`); p != nil {
			t.Errorf("%s: agent text ran: window.pwned = %v", name, p)
		}
		b.Screenshot(shots, name)
	}
	view(t, b, "2", "claims")
	check("claims", img, script, "src/<b>bold</b>/**")
	view(t, b, "3", "handoffs")
	check("handoffs", `<a href="javascript:window.pwned=4">click</a>`, link)
	view(t, b, "4", "tasks")
	check("tasks", "invoice⟨U+202E⟩gnp.exe", "<i>label</i>")
	if got := browsertest.Eval[string](b, `document.getElementById('main').textContent`); strings.ContainsRune(got, '\u202E') {
		t.Error("a bidi control reached the page as a control")
	}
	view(t, b, "5", "validations")
	check("validations", "<svg onload=window.pwned=5>")
	view(t, b, "6", "feed")
	check("feed", img)
	// Chromium refuses any markup a string could become: the CSP requires
	// Trusted Types and allows no policy.
	if got := browsertest.Eval[string](b, `(() => { try { document.body.insertAdjacentHTML('beforeend', '<b id=x>x</b>'); return 'allowed'; } catch (e) { return e.name; } })()`); got != "TypeError" {
		t.Errorf("a string became markup: %s", got)
	}
	if errs := b.Errors(regexp.MustCompile(`TrustedHTML|Trusted Type`)); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBadToken: a refused token shows an error and no data, and is not kept.
func TestBadToken(t *testing.T) {
	s := newService(t, nil)
	seed(t, s)
	b := browsertest.New(t, 1280, 800)
	open(t, b, s.URL+"/", "not-a-real-token")
	b.WaitTrue(wait, `!document.getElementById('error').hidden`)
	wantText(t, browsertest.Eval[string](b, `document.getElementById('error').innerText`), "UNAUTHENTICATED")
	body := browsertest.Eval[string](b, `document.body.innerText`)
	for _, leak := range []string{"alice@studio.dev", "src/physics", "Jump feels floaty"} {
		if strings.Contains(body, leak) {
			t.Errorf("a refused token still shows %q", leak)
		}
	}
	if !browsertest.Eval[bool](b, `document.getElementById('app').hidden && !document.getElementById('login').hidden`) {
		t.Error("the sign-in form should be back and the data hidden")
	}
	if got := browsertest.Eval[any](b, `sessionStorage.getItem('crosscode.token')`); got != nil {
		t.Errorf("the refused token was kept: %v", got)
	}
	browsertest.ArtifactDir(t)
	b.Screenshot(browsertest.ArtifactDir(t), "bad-token")
	// A good token then works in the same tab.
	b.Must(chromedp.SendKeys(chromedp.CSS("#token"), s.Token), chromedp.Click(chromedp.CSS("#login-form button")))
	b.WaitTrue(wait, `document.querySelectorAll('tr[data-replica]').length === 3 && document.getElementById('error').hidden`)
	if errs := b.Errors(regexp.MustCompile(`401|Unauthorized`)); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
