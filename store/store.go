// Package store keeps crosscode-mcp's state in SQLite (modernc.org/sqlite):
// the workspace log that the coordination service and local mode share,
// tokens, presence, and the migrations that create them.
//
// A Store is safe for concurrent use, and several processes may open the
// same file at once: writes take the database's write lock with BEGIN
// IMMEDIATE and wait up to the busy timeout for it; every commit is durable
// (WAL with synchronous=FULL).
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	// BusyTimeout is how long a write waits for another process's write
	// lock before failing. Default 10s.
	BusyTimeout time.Duration
	// Readers is the size of the read connection pool. Default 4.
	Readers int
	// Projections makes every ingest also update the projections (claims
	// with arbitration, intents, tasks, handoffs, validations) in the same
	// transaction, as replicas need; the coordination service does not.
	Projections bool
	// InstanceTTL is how long the coordination service may miss its
	// heartbeats before a later one (after a crash) sets offline the
	// replicas only it held. Default 15s; it beats every third of it.
	InstanceTTL time.Duration
	// Lazy prepares each statement when it is first run, not all of them
	// at Open, and connects the writer at the first write: for a
	// short-lived process that runs a few (an agent client's hook), where
	// preparing them all, or a connection it may not need, would cost more
	// than the work. Open then checks the schema's version and WAL mode on
	// the reader's connection, which the first read needs anyway, and sets
	// the database up through the writer only when they are not current.
	// A Lazy store runs no checkpointer of its own.
	Lazy bool
	// Cache marks a database that is rebuilt when lost (the service's
	// mirrors of its own log): its commits are not synced to disk
	// (synchronous=OFF), which an OS crash may undo, never a process's.
	Cache bool
}

// DefaultInstanceTTL is Options.InstanceTTL's default.
const DefaultInstanceTTL = 15 * time.Second

// Store is an open workspace database.
type Store struct {
	path        string
	projections bool
	lazy        bool    // Options.Lazy
	w           *sql.DB // one connection: every write goes through it
	r           *sql.DB // read-only connections for pages and lookups

	wsMu  sync.RWMutex
	wsIDs map[string]int64 // workspace name -> id; ids never change

	ck        *sql.DB // the background checkpointer's connection
	ckLastLog int     // WAL frames at the checkpointer's last round (its goroutine only)
	stopCk    chan struct{}
	ckDone    chan struct{}

	rmu    sync.Mutex
	rstmts map[string]*sql.Stmt // prepared on r, on first use

	stmts   map[string]*sql.Stmt // writerStatements, prepared on w at Open, reused by every batch
	inserts insertStmts          // the multi-row inserts, prepared on w at Open

	tokens TokenCache

	instance string        // this process's name in connections (presence.go)
	ttl      time.Duration // Options.InstanceTTL
	beats    atomic.Int64  // heartbeats sent
}

// Connection roles. Each has its own pool and DSN.
type role int

const (
	roleWriter     role = iota // every write; one connection
	roleReader                 // pages and lookups; query_only
	roleCheckpoint             // the background checkpointer
)

// dsn builds the DSN of a connection role; pragmas are per connection in
// modernc, so they all go in the DSN. Every commit is durable when it
// returns (WAL, synchronous=FULL), and a commit becomes visible to readers
// only once it is on disk. Checkpoints run in the background (see
// checkpoint), never inside a commit, so no commit pays for a whole one.
func dsn(path string, busy time.Duration, r role, cache bool) string {
	sync := "FULL"
	if cache {
		sync = "OFF"
	}
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", busy.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(" + sync + ")",
		"_pragma=foreign_keys(ON)",
		"_pragma=journal_size_limit(67108864)", // a WAL that grew is cut back to 64 MiB when it restarts
	}
	switch r {
	case roleWriter:
		q = append(q, "_txlock=immediate", "_pragma=wal_autocheckpoint(0)")
	case roleReader:
		q = append(q, "_pragma=query_only(1)")
	}
	return fileURI(filepath.ToSlash(path)) + "?" + strings.Join(q, "&")
}

// fileURI is the SQLite URI of an absolute path written with "/": a path
// with a drive letter ("C:/Users/...", from Windows) goes after a third
// slash, as SQLite reads it ("file:///C:/Users/..."), a UNC path
// ("//server/share/...") after the empty authority, and what a URI would
// read otherwise (space, "?", "#", "%") is escaped.
func fileURI(slashed string) string {
	if !strings.HasPrefix(slashed, "/") {
		slashed = "/" + slashed
	}
	u := url.URL{Scheme: "file", Path: slashed}
	return u.String()
}

// Open opens (creating if needed) the database at path, checks that WAL
// took, and migrates the schema to the current version.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	o := Options{BusyTimeout: 10 * time.Second, Readers: 4, InstanceTTL: DefaultInstanceTTL}
	if opts != nil {
		o.Projections, o.Lazy, o.Cache = opts.Projections, opts.Lazy, opts.Cache
		if opts.InstanceTTL > 0 {
			o.InstanceTTL = opts.InstanceTTL
		}
		if opts.BusyTimeout > 0 {
			o.BusyTimeout = opts.BusyTimeout
		}
		if opts.Readers > 0 {
			o.Readers = opts.Readers
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	w, err := sql.Open("sqlite", dsn(abs, o.BusyTimeout, roleWriter, o.Cache))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	var id [8]byte
	rand.Read(id[:])
	s := &Store{path: abs, projections: o.Projections, lazy: o.Lazy, instance: hex.EncodeToString(id[:]), ttl: o.InstanceTTL, w: w, wsIDs: map[string]int64{}, stmts: map[string]*sql.Stmt{}, rstmts: map[string]*sql.Stmt{}}
	r, err := sql.Open("sqlite", dsn(abs, o.BusyTimeout, roleReader, o.Cache))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	r.SetMaxOpenConns(o.Readers)
	r.SetMaxIdleConns(o.Readers)
	s.r = r
	if !o.Lazy || !current(ctx, r) {
		// Making the database, switching it to WAL and its first recovery
		// take locks that SQLite does not wait for with busy_timeout:
		// agents started at once in a fresh repository meet there and get
		// SQLITE_BUSY at once. Try again, for up to the busy timeout.
		deadline := time.Now().Add(o.BusyTimeout)
		wait := 2 * time.Millisecond
		for err = setUpWriter(ctx, w); isBusy(err) && time.Now().Before(deadline) && ctx.Err() == nil; err = setUpWriter(ctx, w) {
			time.Sleep(wait)
			wait = min(2*wait, 100*time.Millisecond)
		}
		if err != nil {
			r.Close()
			w.Close()
			return nil, fmt.Errorf("open store %s: %w", abs, err)
		}
	}
	// Prepare every statement of the writer's paths now: w has one
	// connection, so nothing can be prepared on it while a batch holds it
	// (Lazy: each is prepared in the transaction that first runs it).
	if !o.Lazy {
		if err := s.prepareWriter(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store: prepare: %w", err)
		}
	}
	for _, q := range readTxStatements {
		if o.Lazy {
			break // readTxQuery compiles them on the transaction's connection
		}
		if _, err := s.rstmt(ctx, q); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store: prepare: %w", err)
		}
	}
	if o.Lazy {
		// A short-lived process leaves the checkpoints to the long-lived
		// ones (the MCP server, the service) and to SQLite's own, when
		// the last connection to the file closes.
		return s, nil
	}
	ck, err := sql.Open("sqlite", dsn(abs, o.BusyTimeout, roleCheckpoint, o.Cache))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	ck.SetMaxOpenConns(1)
	s.ck = ck
	s.stopCk = make(chan struct{})
	s.ckDone = make(chan struct{})
	go s.checkpointer(100 * time.Millisecond)
	return s, nil
}

// setUpWriter checks that the writer's connection is in WAL mode and
// migrates the schema.
func setUpWriter(ctx context.Context, w *sql.DB) error {
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, not wal (is it on a network filesystem?)", mode)
	}
	return migrate(ctx, w)
}

// current reports whether the database is in WAL mode with the schema
// this binary writes, as seen on a reader's connection: then the writer
// needs no set-up (Options.Lazy). Any error says no, and the writer's
// set-up decides.
func current(ctx context.Context, r *sql.DB) bool {
	var mode string
	var v int
	return r.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode) == nil && strings.EqualFold(mode, "wal") &&
		r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v) == nil && v == len(migrations)
}

// isBusy reports an SQLITE_BUSY of any kind (a lock another connection
// holds).
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

// prepareWriter prepares on w every statement the writer's transactions
// run: writerStatements by text, and the multi-row inserts by table and
// row count.
func (s *Store) prepareWriter(ctx context.Context) error {
	for _, q := range writerStatements() {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		s.stmts[q] = st
	}
	for t, tab := range insertTables {
		for k, n := range insertChunks {
			st, err := s.w.PrepareContext(ctx, insertSQL(tab.table, tab.cols, n))
			if err != nil {
				return err
			}
			s.inserts[t][k] = st
		}
	}
	return nil
}

// wstmt returns tx's handle on q, which Open prepared on the writer (see
// writerStatements). Every statement the writer's transactions run is
// prepared there, so one that is not is a mistake, reported as an error
// rather than compiled on the spot.
func (s *Store) wstmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	st := s.stmts[q]
	if st == nil && s.lazy {
		return tx.PrepareContext(ctx, q) // on tx's own connection
	}
	if st == nil {
		return nil, fmt.Errorf("store: statement not prepared at Open (add it to writerStatements): %s", q)
	}
	return tx.StmtContext(ctx, st), nil
}

// txExec runs q, a statement prepared at Open, in tx.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	st, err := s.wstmt(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// txQuery runs q, a statement prepared at Open, in tx.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	st, err := s.wstmt(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// txQueryRow runs q, a statement prepared at Open, in tx for one row.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) rowScanner {
	st, err := s.wstmt(ctx, tx, q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// errRow is a row whose Scan reports err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// rstmt returns q prepared on the read pool, preparing it on first use:
// with modernc, preparing costs more than running most of these queries.
// Query texts come from a fixed set, so the cache stays small. Preparing
// takes a pool connection, so it happens outside rmu (and never from
// inside a read transaction: see readTxQuery).
func (s *Store) rstmt(ctx context.Context, q string) (*sql.Stmt, error) {
	s.rmu.Lock()
	st, ok := s.rstmts[q]
	s.rmu.Unlock()
	if ok {
		return st, nil
	}
	st, err := s.r.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if prev, ok := s.rstmts[q]; ok { // another caller prepared it meanwhile
		st.Close()
		return prev, nil
	}
	s.rstmts[q] = st
	return st, nil
}

// readQuery runs q on the read pool through its prepared statement.
func (s *Store) readQuery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.rstmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// readQueryRow is readQuery for one row.
func (s *Store) readQueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := s.rstmt(ctx, q)
	if err != nil {
		return s.r.QueryRowContext(ctx, q, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// readTxQuery runs q in a read transaction through its statement, which
// Open prepared (readTxStatements): preparing now would need a second
// pool connection while tx holds one, and with every connection held by
// such a transaction none would come.
func (s *Store) readTxQuery(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	s.rmu.Lock()
	st := s.rstmts[q]
	s.rmu.Unlock()
	if st == nil {
		return tx.QueryContext(ctx, q, args...) // compiled on tx's own connection
	}
	return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
}

// Path is the database file's absolute path.
func (s *Store) Path() string { return s.path }

// Close closes the database. Pending writes must have finished.
func (s *Store) Close() error {
	var errs []error
	if s.stopCk != nil {
		close(s.stopCk)
		<-s.ckDone
	}
	for _, st := range s.stmts {
		st.Close()
	}
	for _, sts := range s.inserts {
		for _, st := range sts {
			if st != nil {
				st.Close()
			}
		}
	}
	for _, st := range s.rstmts {
		st.Close()
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if s.ck != nil {
		errs = append(errs, s.ck.Close())
	}
	return errors.Join(errs...)
}

// checkpointer copies the WAL back into the database file every interval
// (see checkpoint), so no commit pays for a whole checkpoint.
func (s *Store) checkpointer(interval time.Duration) {
	defer close(s.ckDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stopCk:
			return
		case <-t.C:
			s.checkpoint()
		}
	}
}

// checkpoint copies the WAL back into the database file and lets the next
// commit start the WAL over.
//
// The first pass runs on the checkpointer's own connection and copies what
// is there without blocking writers (PASSIVE). Under continuous writes that
// never finishes: commits append frames while it copies, the WAL is never
// wholly copied, so SQLite never starts it over and it grows without bound
// (420 MiB in 10 s of sequential ingest before this second pass). So once
// the WAL holds restartFrames frames, a second pass runs on the writer
// connection, which this process's writes share: it copies only what the
// first pass missed, with no commit of ours appending meanwhile, and the
// next commit starts the WAL over. Commits wait for that tail only, not for
// the whole copy. Another process writing or checkpointing at the same time
// just leaves the work for the next round.
func (s *Store) checkpoint() {
	var busy, log, done int
	start := time.Now()
	// log and done count the frames there were when the pass began: more
	// may have been appended since, so done == log alone proves nothing.
	if err := s.ck.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done); err != nil || log < restartFrames {
		return
	}
	idle := done == log && log == s.ckLastLog // nothing written since the last round
	s.ckLastLog = log
	// What the second pass copies was written while the first one ran: a
	// long first pass (a burst of retention deletes, say) would mean a long
	// wait for commits, so that round leaves the WAL as it is and the next,
	// shorter one finishes the job.
	if idle || time.Since(start) > maxTailLag {
		return
	}
	_ = s.w.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
}

// maxTailLag bounds how long the writer may wait for the second pass:
// at most what this long a stretch of writes put in the WAL (about 10 ms
// of copying under a retention sweep, measured).
const maxTailLag = 25 * time.Millisecond

// restartFrames is the WAL size, in frames (of a page each), from which
// the checkpointer makes sure the WAL starts over: SQLite's own default
// checkpoint threshold, about 4 MiB.
const restartFrames = 1000

// migrations are applied in order; user_version counts how many ran.
// Never edit a released migration: append a new one.
var migrations = []string{
	// 1: the workspace log.
	`
CREATE TABLE workspaces (
	id               INTEGER PRIMARY KEY,
	name             TEXT NOT NULL UNIQUE,
	plan             TEXT NOT NULL,
	retained_through INTEGER NOT NULL DEFAULT 0, -- highest serverSequence retention deleted
	last_ingested_us INTEGER NOT NULL DEFAULT 0, -- ingestedAt of the newest deleted operation, unix microseconds
	created_us       INTEGER NOT NULL
);
CREATE TABLE tokens (
	hash       BLOB PRIMARY KEY, -- SHA-256 of the token; the token itself is never stored
	ws         INTEGER NOT NULL REFERENCES workspaces(id),
	created_us INTEGER NOT NULL
) WITHOUT ROWID;
-- The ordered log. id is opID(workspace, serverSequence) = workspace<<40 | seq,
-- so one b-tree orders every workspace's log and the head is its last row.
-- Retention deletes old rows in serverSequence order.
CREATE TABLE ops (
	id          INTEGER PRIMARY KEY,
	kind        INTEGER NOT NULL,
	ingested_us INTEGER NOT NULL,
	body        BLOB NOT NULL -- canonical envelope JSON without serverSequence/ingestedAt
);
CREATE INDEX ops_by_kind ON ops (kind, id);
-- One row per envelope ever ingested, kept for ever: (replicaId, clientSequence)
-- identifies an envelope, and a retried upload must get its original receipt
-- even after retention deleted the operation.
CREATE TABLE receipts (
	ws          INTEGER NOT NULL,
	replica     TEXT NOT NULL,
	client_seq  INTEGER NOT NULL,
	id          TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	ingested_us INTEGER NOT NULL,
	hash        BLOB NOT NULL, -- SHA-256 of the canonical envelope
	PRIMARY KEY (ws, replica, client_seq)
) WITHOUT ROWID;
-- Every entity id ever opened, with its kind, kept for ever.
CREATE TABLE entities (
	ws   INTEGER NOT NULL,
	id   TEXT NOT NULL,
	kind INTEGER NOT NULL,
	PRIMARY KEY (ws, id)
) WITHOUT ROWID;
CREATE TABLE presence (
	ws         INTEGER NOT NULL,
	replica    TEXT NOT NULL,
	actor      TEXT NOT NULL,
	session    TEXT NOT NULL,
	agent      TEXT NOT NULL, -- JSON, or ''
	status     TEXT NOT NULL,
	updated_us INTEGER NOT NULL,
	PRIMARY KEY (ws, replica)
) WITHOUT ROWID;
`,
	// 2: what a replica keeps: its clientSequence counter, the outbox of
	// envelopes not yet acknowledged by a service, cursors, and the
	// projections computed from the log.
	`
CREATE TABLE replica_seq (
	replica TEXT PRIMARY KEY,
	next    INTEGER NOT NULL -- the next clientSequence; never handed out twice
) WITHOUT ROWID;
CREATE TABLE outbox (
	replica     TEXT NOT NULL,
	client_seq  INTEGER NOT NULL,
	workspace   TEXT NOT NULL,
	kind        INTEGER NOT NULL,
	body        BLOB NOT NULL, -- canonical envelope JSON
	created_us  INTEGER NOT NULL,
	status      INTEGER NOT NULL DEFAULT 0, -- 0 pending, 1 acknowledged, 2 refused
	attempts    INTEGER NOT NULL DEFAULT 0,
	last_error  TEXT NOT NULL DEFAULT '',
	server_seq  INTEGER NOT NULL DEFAULT 0,
	ingested_us INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (replica, client_seq)
) WITHOUT ROWID;
CREATE INDEX outbox_by_status ON outbox (status, replica, client_seq);
CREATE TABLE cursors (
	name       TEXT PRIMARY KEY,
	seq        INTEGER NOT NULL,
	updated_us INTEGER NOT NULL
) WITHOUT ROWID;
-- Projections: the current state of every entity, a pure function of the
-- log in server order, so every replica computes the same.
CREATE TABLE proj_through (
	ws  INTEGER PRIMARY KEY,
	seq INTEGER NOT NULL -- every operation up to here is applied
);
CREATE TABLE proj (
	ws          INTEGER NOT NULL,
	kind        INTEGER NOT NULL,
	id          TEXT NOT NULL,
	actor       TEXT NOT NULL, -- claim: current holder; task: creator; handoff: from; others: author
	target      TEXT NOT NULL, -- handoff: toActorId; task: assignee
	status      TEXT NOT NULL, -- claim: active/denied/released; task, handoff, validation: their status; intent: active
	exclusive   INTEGER NOT NULL DEFAULT 0,
	created_seq INTEGER NOT NULL,
	seq         INTEGER NOT NULL, -- the last operation that changed it
	ingested_us INTEGER NOT NULL, -- of the opening operation
	updated_us  INTEGER NOT NULL, -- of the last operation
	expires_us  INTEGER NOT NULL, -- claims and intents; 0 = never
	body        BLOB NOT NULL,    -- the latest payload JSON
	detail      TEXT NOT NULL DEFAULT '', -- claim: why it was denied (JSON)
	PRIMARY KEY (ws, kind, id)
) WITHOUT ROWID;
CREATE INDEX proj_by_status ON proj (ws, kind, status, seq);
CREATE INDEX proj_by_actor ON proj (ws, kind, actor, status);
-- Active claims' patterns, by literal prefix, so a conflict check reads only
-- the claims whose prefix is an ancestor or descendant of the query's.
CREATE TABLE proj_claim_patterns (
	ws      INTEGER NOT NULL,
	prefix  TEXT NOT NULL,
	id      TEXT NOT NULL,
	pattern TEXT NOT NULL,
	PRIMARY KEY (ws, prefix, id, pattern)
) WITHOUT ROWID;
`,
	// 3: captures: every operation the Cappy controller ran, its events as
	// they arrived, and the replays it stores.
	`
CREATE TABLE captures (
	op           TEXT PRIMARY KEY,
	kind         TEXT NOT NULL, -- scenario, recording, replay
	scenario     TEXT NOT NULL DEFAULT '',
	parameters   TEXT NOT NULL DEFAULT '{}', -- JSON, after defaults
	presentation TEXT NOT NULL DEFAULT '{}', -- JSON
	status       TEXT NOT NULL,              -- preparing, running, stopping, completed, failed, cancelled
	code         TEXT NOT NULL DEFAULT '',
	message      TEXT NOT NULL DEFAULT '',
	game         TEXT NOT NULL DEFAULT '',
	adapter      TEXT NOT NULL DEFAULT '',
	build        TEXT NOT NULL DEFAULT '',
	replay_sha   TEXT NOT NULL DEFAULT '', -- a recording's replay, or the replay a replay played
	replay_of    TEXT NOT NULL DEFAULT '', -- a replay's original recording op
	events       INTEGER NOT NULL DEFAULT 0,
	last_t       REAL NOT NULL DEFAULT 0,
	created_us   INTEGER NOT NULL,
	started_us   INTEGER NOT NULL DEFAULT 0,
	ended_us     INTEGER NOT NULL DEFAULT 0,
	summary      TEXT NOT NULL DEFAULT '' -- JSON, e.g. a replay's divergence check
);
CREATE INDEX captures_by_time ON captures (created_us);
CREATE TABLE capture_events (
	op          TEXT NOT NULL,
	seq         INTEGER NOT NULL, -- receipt order, from 1
	t           REAL NOT NULL,
	event       TEXT NOT NULL,
	duration_ms REAL,
	payload     BLOB, -- JSON object as the adapter sent it
	received_us INTEGER NOT NULL,
	PRIMARY KEY (op, seq)
) WITHOUT ROWID;
CREATE TABLE replays (
	sha256     TEXT PRIMARY KEY,
	bytes      INTEGER NOT NULL,
	format     TEXT NOT NULL DEFAULT '',
	path       TEXT NOT NULL, -- the read-only copy in the content-addressed store
	created_us INTEGER NOT NULL
) WITHOUT ROWID;
`,
	// 4: an index for every way entities are listed, so no listing, count
	// or projection step reads the whole history of a kind. Listings are
	// newest first by created_seq, which never changes, so an entity's
	// entries move only when its status does.
	`
DROP INDEX proj_by_status;
CREATE INDEX proj_by_status ON proj (ws, kind, status, created_seq);
CREATE INDEX proj_by_target ON proj (ws, kind, target, status);
CREATE INDEX proj_by_created ON proj (ws, kind, created_seq);
`,
	// 5: frames (what the agent sees): an index of each operation's frames,
	// whose images are files beside the capture store, and per capture the
	// frames asked for, kept and dropped. seq is shared with the events
	// (receipt order), so events counts events and last_seq the receipts.
	`
ALTER TABLE captures ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
UPDATE captures SET last_seq = events;
ALTER TABLE captures ADD COLUMN frames_request TEXT NOT NULL DEFAULT ''; -- JSON, the frames asked for
ALTER TABLE captures ADD COLUMN frames INTEGER NOT NULL DEFAULT 0;
ALTER TABLE captures ADD COLUMN frame_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE captures ADD COLUMN frames_dropped TEXT NOT NULL DEFAULT ''; -- JSON {"rate","budget","slow"}
ALTER TABLE captures ADD COLUMN owner TEXT NOT NULL DEFAULT ''; -- the controller that runs it (its lock file)
CREATE TABLE capture_frames (
	op          TEXT NOT NULL,
	seq         INTEGER NOT NULL, -- receipt order, shared with the op's events
	t           REAL NOT NULL,
	mime        TEXT NOT NULL,
	width       INTEGER NOT NULL,
	height      INTEGER NOT NULL,
	bytes       INTEGER NOT NULL,
	reason      TEXT NOT NULL DEFAULT '',
	file        TEXT NOT NULL, -- relative to the frame directory
	sha256      TEXT NOT NULL, -- of the image bytes: equal images compare without decoding
	sig         BLOB,          -- its visual signature, computed when first compared
	received_us INTEGER NOT NULL,
	PRIMARY KEY (op, seq)
) WITHOUT ROWID;
CREATE INDEX capture_frames_by_t ON capture_frames (op, t);
-- Events by name (get_capture's filter, keyframes at named events) read
-- only the matching ones, not the whole capture.
CREATE INDEX capture_events_by_name ON capture_events (op, event, seq);
`,
	// 6: the coordination service's subscriptions, by the process (the
	// instance) that holds them, and each instance's heartbeat: a replica
	// goes offline when its last subscription ends, and when the service
	// that held it died (kill -9, a crash) and it did not come back to the
	// next one.
	`
CREATE TABLE instances (
	id      TEXT PRIMARY KEY,
	seen_us INTEGER NOT NULL -- the last heartbeat
) WITHOUT ROWID;
CREATE TABLE connections (
	ws       INTEGER NOT NULL,
	replica  TEXT NOT NULL,
	instance TEXT NOT NULL,
	PRIMARY KEY (ws, replica, instance)
) WITHOUT ROWID;
CREATE INDEX connections_by_instance ON connections (instance);
`,
	// 7: idempotency keys: a write logged under a key (the n-th write of
	// one MCP tool call over HTTP) is logged once; a retry of the call
	// gets the original receipt. Kept for ever, like receipts.
	`
CREATE TABLE idem_keys (
	ws         INTEGER NOT NULL,
	key        TEXT NOT NULL,
	kind       INTEGER NOT NULL,
	replica    TEXT NOT NULL,
	client_seq INTEGER NOT NULL,
	PRIMARY KEY (ws, key)
) WITHOUT ROWID;
`,
	// 8: the seed of the game's randomness a recording was made with (and
	// a replay played with), for adapters that take one; NULL otherwise.
	`
ALTER TABLE captures ADD COLUMN seed INTEGER;
`,
	// 9: claims that wait their turn (see queue.go). A queued claim's row
	// holds its schedule as the log so far decides it: grant_us, when it is
	// granted (0: not before its wait ends), wait_us, when its wait ends,
	// and expires_us, when it stops mattering (its lease's end once
	// granted, else wait_us). wait_us is set on every claim that asked to
	// wait, granted at once or not. The partial indexes find the live
	// queue, the live claims that asked to wait, and an actor's waits,
	// without reading the history of other claims.
	`
ALTER TABLE proj ADD COLUMN grant_us INTEGER NOT NULL DEFAULT 0;
ALTER TABLE proj ADD COLUMN wait_us INTEGER NOT NULL DEFAULT 0;
CREATE INDEX proj_queued ON proj (ws, kind, expires_us) WHERE status = 'queued';
CREATE INDEX proj_by_wait ON proj (ws, kind, actor, wait_us) WHERE wait_us > 0;
CREATE INDEX proj_waited ON proj (ws, kind, expires_us) WHERE wait_us > 0;
`,
	// 10: what the agent is told beside a capture's outcome: its warnings
	// (a JSON array of text, the game's and the controller's), and end_t,
	// where it ended on its presented clock (NULL until it ended).
	`
ALTER TABLE captures ADD COLUMN warnings TEXT NOT NULL DEFAULT '';
ALTER TABLE captures ADD COLUMN end_t REAL;
`,
	// 11: the last result of each saved play run here (see plays.go): by
	// the test command or the replay tool, whichever ran it last.
	`
CREATE TABLE play_results (
	name       TEXT PRIMARY KEY,
	file_sha   TEXT NOT NULL, -- SHA-256 of the play file that ran
	status     TEXT NOT NULL, -- passed, failed, error
	message    TEXT NOT NULL DEFAULT '',
	op         TEXT NOT NULL DEFAULT '', -- the replay's operation
	commit_sha TEXT NOT NULL DEFAULT '',
	wall_ms    INTEGER NOT NULL DEFAULT 0,
	at_us      INTEGER NOT NULL
) WITHOUT ROWID;
`,
}

// SchemaVersion is the schema version this binary writes.
var SchemaVersion = len(migrations)

// migrate applies missing migrations in one IMMEDIATE transaction, so two
// processes opening a new file at once cannot both apply them.
func migrate(ctx context.Context, db *sql.DB) error {
	// Current already (the usual case): no write lock needed to see it,
	// and versions only grow.
	var cur int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err == nil && cur == len(migrations) {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this binary supports (%d): upgrade crosscode-mcp", v, len(migrations))
	}
	if v == len(migrations) {
		return nil
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return tx.Commit()
}

// Version reports the file's schema version.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// IntegrityCheck runs SQLite's quick_check and returns its findings ("ok"
// when healthy).
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	rows, err := s.r.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"), rows.Err()
}

// seqBits is how many low bits of an ops id hold the serverSequence.
const seqBits = 40

// opID is the ops row id of a workspace's serverSequence.
func opID(ws, seq int64) int64 { return ws<<seqBits | seq }

// opSeq is the serverSequence of an ops row id.
func opSeq(id int64) int64 { return id & (1<<seqBits - 1) }

func micros(t time.Time) int64      { return t.UnixMicro() }
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
