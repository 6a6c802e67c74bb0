package cappy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Service is capture as the tools see it: the controller, the game it
// launches on demand, the capture config, and the capture store.
type Service struct {
	Controller   *Controller
	Launcher     GameLauncher // nil when there is no game to launch
	Config       *CaptureConfig
	Store        *store.Store
	refusedMu    sync.Mutex
	refused      *Error // the page driver's lasting refusal (see refusal)
	log          *slog.Logger
	endpointFile string
	freshMu      sync.Mutex // one EnsureFresh at a time
	// playDir is the saved plays' folder, repoDir the repository, and
	// gameCommand the command that launches the game (nil: none).
	playDir, repoDir string
	gameCommand      []string
	playsMu          sync.Mutex
	playSums         map[string]playSummary // by file (Plays)
}

// GameLauncher starts the game and stops it: a process (*Launcher) or a
// web game in a browser (*BrowserLauncher).
type GameLauncher interface {
	// Start launches the game unless it is running.
	Start(endpoint, token string) error
	Info() LaunchInfo
	// Running reports whether the game is alive.
	Running() bool
	// Exited is closed when the game last started exits (nil before the
	// first start).
	Exited() <-chan struct{}
	// Stop ends the game and what it started.
	Stop(grace time.Duration)
	// Tail returns up to n bytes from the end of the game's log.
	Tail(n int64) string
}

// ServiceConfig configures NewService.
type ServiceConfig struct {
	Data string // state dir: captures.db, replays/, game.log
	// EndpointFile is where {endpoint, token} go when the user starts the
	// game; default Data/cappy-endpoint.json.
	EndpointFile string
	Config       *CaptureConfig // the capture config (may be empty)
	// ConfigPath is the capture config's file (it need not exist): the
	// saved plays live beside it by default.
	ConfigPath  string
	GameCommand []string // --game-cmd; overrides the config's
	GameDir     string   // where the game runs by default (the repository)
	Listen      string   // --cappy-listen; overrides the config's
	Version     string
	Logger      *slog.Logger
	// MaxReplayBytes caps a recording's replay (Config.MaxReplayBytes);
	// zero means DefaultMaxReplayBytes.
	MaxReplayBytes int64
	// Controller tuning, for tests; zero means the protocol's defaults.
	HelloTimeout, PingEvery, PongTimeout time.Duration
}

// NewService opens the capture store and starts the controller.
func NewService(ctx context.Context, sc ServiceConfig) (*Service, error) {
	if sc.Config == nil {
		sc.Config = &CaptureConfig{}
	}
	st, err := store.Open(ctx, filepath.Join(sc.Data, "captures.db"), nil)
	if err != nil {
		return nil, err
	}
	listen := sc.Listen
	if listen == "" {
		listen = sc.Config.Listen
	}
	ctrl, err := New(Config{Listen: listen, AllowedOrigins: sc.Config.AllowedOrigins, RequiredCapabilities: sc.Config.RequiredCapabilities, Events: sc.Config.Events,
		Store: st, ReplayDir: filepath.Join(sc.Data, "replays"), Logger: sc.Logger, Version: sc.Version,
		HelloTimeout: sc.HelloTimeout, PingEvery: sc.PingEvery, PongTimeout: sc.PongTimeout, MaxReplayBytes: sc.MaxReplayBytes,
		FrameDir: filepath.Join(sc.Data, "frames"), FrameBudget: frameBudget(sc.Config.Frames)})
	if err != nil {
		st.Close()
		return nil, err
	}
	if n, err := ctrl.RecoverAbandoned(ctx); err != nil {
		ctrl.Close()
		st.Close()
		return nil, fmt.Errorf("cappy: recover abandoned operations: %w", err)
	} else if n > 0 {
		ctrl.log.Warn("ended operations that a stopped controller left open", "count", n)
	}
	s := &Service{Controller: ctrl, Config: sc.Config, Store: st, log: sc.Logger, repoDir: sc.GameDir}
	s.playDir = playDir(sc)
	cmd, dir, env := sc.GameCommand, sc.GameDir, map[string]string(nil)
	game := sc.Config.Game
	if len(cmd) == 0 && game != nil {
		cmd, env = game.Command, game.Env
		if game.Cwd != "" {
			dir = game.Dir(sc.GameDir)
		}
	}
	s.gameCommand = cmd
	logPath := filepath.Join(sc.Data, "game.log")
	switch {
	case len(sc.GameCommand) == 0 && game.Web():
		w := ResolveWebGame(game, sc.GameDir)
		b := &BrowserLauncher{URL: w.URL, Serve: w.Serve, Browser: game.Browser, Headed: game.Headed, LogPath: logPath, Allow: ctrl.AllowOrigin, Logger: sc.Logger,
			Adapter: game.AdapterMode(), Connected: func() bool { return ctrl.Connected() != nil }, GameID: w.ID, Actions: game.Actions, Version: sc.Version}
		if len(cmd) > 0 {
			b.Server = &Launcher{Command: cmd, Dir: dir, Env: env, LogPath: logPath}
		}
		s.Launcher = b
	case len(cmd) > 0:
		s.Launcher = &Launcher{Command: cmd, Dir: dir, Env: env, LogPath: logPath}
	default:
		// The user starts the game: tell it where to connect.
		s.endpointFile = sc.EndpointFile
		if s.endpointFile == "" {
			s.endpointFile = filepath.Join(sc.Data, "cappy-endpoint.json")
		}
		b, _ := json.Marshal(map[string]string{"endpoint": ctrl.Endpoint(), "token": ctrl.Token()})
		if err := os.WriteFile(s.endpointFile, b, 0o600); err != nil {
			s.Close()
			return nil, err
		}
		os.Chmod(s.endpointFile, 0o600)
	}
	return s, nil
}

// playDir is where the saved plays live: the config's plays, relative to
// the repository, else the folder "plays" beside the capture config.
func playDir(sc ServiceConfig) string {
	dir := ""
	switch {
	case sc.Config.Plays != "":
		dir = filepath.Join(sc.GameDir, filepath.FromSlash(sc.Config.Plays))
	case sc.ConfigPath != "":
		dir = filepath.Join(filepath.Dir(sc.ConfigPath), "plays")
	case sc.GameDir != "":
		dir = filepath.Join(sc.GameDir, ".crosscode", "plays")
	default:
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

func frameBudget(f *FramesConfig) int64 {
	if f == nil || f.BudgetMiB <= 0 {
		return 0 // the default
	}
	return int64(f.BudgetMiB) << 20
}

// FramesRequest is the frames to ask for: at fps (<0: the config's
// default; 0: none), at most the config's maxWidth, JPEG or PNG.
func (s *Service) FramesRequest(fps float64) *protocol.FramesRequest {
	if fps < 0 {
		fps = s.Config.Frames.FPSOrDefault()
	}
	if fps == 0 {
		return nil
	}
	return &protocol.FramesRequest{FPS: fps, MaxWidth: s.Config.Frames.MaxWidthOrDefault(), Formats: slices.Clone(protocol.FrameMimes)}
}

// StepPictures is the frames to ask for in an agent-controlled recording
// at frames 0: none at a rate, each step's picture (Request.Frames).
func (s *Service) StepPictures() *protocol.FramesRequest {
	return &protocol.FramesRequest{FPS: 0, MaxWidth: s.Config.Frames.MaxWidthOrDefault(), Formats: slices.Clone(protocol.FrameMimes)}
}

// EndpointFile is where the endpoint and token were written for a game the
// user starts themselves ("" when the controller launches the game).
func (s *Service) EndpointFile() string { return s.endpointFile }

// LaunchWait is how long launching the game may take to its registry.
const LaunchWait = 30 * time.Second

// EnsureAdapter returns the connected adapter, launching the game (again)
// when none is connected, and waiting up to LaunchWait for its handshake
// and scenario registry.
func (s *Service) EnsureAdapter(ctx context.Context) (*Adapter, error) {
	if a := s.Controller.Connected(); a != nil {
		if a.Name != PageAdapterName || s.Launcher == nil || s.Launcher.Running() {
			return a, nil
		}
		// The page driver of a browser that was closed (a page that hung
		// or misbehaved): its connection is about to end; the game is
		// launched afresh once it has.
		for deadline := time.Now().Add(5 * time.Second); s.Controller.Connected() != nil && time.Now().Before(deadline); {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	s.refusedMu.Lock()
	refused := s.refused
	s.refusedMu.Unlock()
	if refused != nil {
		return nil, refused
	}
	if s.Launcher == nil {
		return nil, errorf(protocol.CappyAdapterDisconnected,
			"no game is connected and none is configured to launch: set game.command in .crosscode/capture.json or pass --game-cmd, or start the game yourself with CAPPY_ENDPOINT=%s and the token in %s",
			s.Controller.Endpoint(), s.endpointFile)
	}
	_, rejected := s.Controller.Rejected()
	if err := s.Launcher.Start(s.Controller.Endpoint(), s.Controller.Token()); err != nil {
		return nil, errorf(protocol.CappyAdapterDisconnected, "%v", err)
	}
	// Waits for the handshake, and gives up at once when the game's
	// adapter is refused or the game exits first: there is nothing to wait
	// for then, and the agent learns why now rather than at a timeout.
	wctx, cancel := context.WithTimeoutCause(ctx, LaunchWait, errLaunchTimeout)
	defer cancel()
	gctx, giveUp := context.WithCancelCause(wctx)
	defer giveUp(nil)
	exited := s.Launcher.Exited()
	go func() {
		select {
		case <-rejected:
			giveUp(errRejected)
		case <-exited:
			giveUp(errExited)
		case <-gctx.Done():
		}
	}()
	a, err := s.Controller.WaitAdapter(gctx)
	if err == nil {
		return a, nil
	}
	info := s.Launcher.Info()
	cause := context.Cause(gctx)
	if r, _ := s.Controller.Rejected(); r != nil && (cause == errRejected || cause == errExited) && r.At.After(info.Started) {
		// Refused (a game often exits after its reject: the reject says more).
		s.settleLog(exited)
		return nil, s.refusal(r, s.logTail())
	}
	tail := s.logTail()
	switch {
	case cause == errExited:
		return nil, errorf(protocol.CappyAdapterDisconnected, "the game exited before its handshake (%s)%s", info.LastExit, tail)
	case errors.Is(cause, context.Canceled) || errors.Is(err, context.Canceled):
		return nil, errorf(protocol.CappyAdapterDisconnected, "cancelled while waiting for the game")
	}
	return nil, errorf(protocol.CappyAdapterDisconnected, "the game did not connect within %s%s", LaunchWait, tail)
}

// EnsureFresh returns the connected adapter for a recording or replay
// seeded with seed, the game in the state it launches in: a game
// crosscode-mcp launches as a process, whose adapter does not reset the
// game itself (protocol.CapResetsItself), is stopped and launched anew
// (with CAPPY_SEED=seed) when an operation ran since its launch, or, for
// an adapter that takes a seed, it was launched with another. A web game
// (its page driver or adapter starts it afresh) and a game the user
// started are taken as they are.
func (s *Service) EnsureFresh(ctx context.Context, seed int64) (*Adapter, error) {
	l, ok := s.Launcher.(*Launcher)
	if !ok {
		return s.EnsureAdapter(ctx)
	}
	s.freshMu.Lock()
	defer s.freshMu.Unlock()
	a := s.Controller.Connected()
	switch {
	case s.Controller.Active() != nil:
		return s.EnsureAdapter(ctx) // busy: the operation's start says so
	case a == nil && l.Running() && l.Seed() == seed:
		return s.EnsureAdapter(ctx) // launched for this seed, not connected yet
	case a == nil && !l.Running():
		l.SetSeed(seed)
		return s.EnsureAdapter(ctx)
	case a != nil && (a.HasCapability(protocol.CapResetsItself) || a.Operations == 0 && (l.Seed() == seed || !a.HasCapability(protocol.CapSeed))):
		return a, nil
	}
	s.Controller.log.Info("starting the game afresh", "seed", seed, "operations", opsOf(a), "launchSeed", l.Seed())
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := s.Controller.Disconnect(dctx, "a new game process for the next recording or replay")
	cancel()
	if err != nil {
		return nil, errorf(protocol.CappyAdapterDisconnected, "could not close the game's connection to start it afresh: %v", err)
	}
	l.Stop(5 * time.Second)
	l.SetSeed(seed)
	return s.EnsureAdapter(ctx)
}

func opsOf(a *Adapter) int {
	if a == nil {
		return 0
	}
	return a.Operations
}

// refusal is the error of a refused handshake. The page driver's hello
// comes from the capture config alone: in page mode its refusal (unless
// another adapter held the controller) would come back at every launch,
// so it is kept, and later calls answer it without launching the browser.
func (s *Service) refusal(r *Rejection, tail string) error {
	if r.Adapter != PageAdapterName {
		return errorf(r.Code, "the game's adapter was refused: %s%s", r.Message, tail)
	}
	if b, ok := s.Launcher.(*BrowserLauncher); !ok || b.Adapter != AdapterPage {
		return errorf(r.Code, "no adapter of the page's own said hello within %s of its load, and crosscode-mcp's page driver, which then drives it, was refused: %s%s", PageAdapterWait, r.Message, tail)
	}
	if r.Code == protocol.CappyOperationBusy {
		return errorf(r.Code, "crosscode-mcp's page driver was refused: %s", r.Message)
	}
	e := errorf(r.Code, "crosscode-mcp's page driver (game.adapter \"page\") was refused: %s. It says hello from the capture config alone, so every launch would be refused the same: no browser is launched again until the MCP server starts with a changed capture config (crosscode-mcp doctor checks it)", r.Message)
	s.refusedMu.Lock()
	s.refused = e
	s.refusedMu.Unlock()
	return e
}

var (
	errLaunchTimeout = errors.New("launch timed out")
	errRejected      = errors.New("the adapter was refused")
	errExited        = errors.New("the game exited")
)

// How long a refusal's message waits for what the game printed before it
// to reach its log, at most, and the quiet that ends the wait sooner.
const (
	settleMax   = time.Second
	settleQuiet = 100 * time.Millisecond
)

// settleLog gives what the game printed on its way to a refusal the time
// to reach its log: the game's output comes through a pipe, and the
// refusal over the socket can overtake it (under Wine it did). A refused
// game usually exits at once, and its log is whole when it has; one that
// stays is given until its log has been quiet a moment.
func (s *Service) settleLog(exited <-chan struct{}) {
	size := func() int64 {
		fi, err := os.Stat(s.Launcher.Info().LogPath)
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	deadline := time.After(settleMax)
	for was := size(); ; {
		select {
		case <-exited:
			return
		case <-deadline:
			return
		case <-time.After(settleQuiet):
		}
		now := size()
		if now == was {
			return
		}
		was = now
	}
}

// logTail is the end of the game's log for an error message, sanitised
// (the game wrote it), or a pointer to the log when it is empty.
func (s *Service) logTail() string {
	info := s.Launcher.Info()
	t := strings.TrimSpace(sanitize.Text(s.Launcher.Tail(1500), 1500))
	if t == "" {
		return "; its log " + info.LogPath + " is empty"
	}
	return "; the end of its log (" + info.LogPath + "):\n" + t
}

// Preset returns a named presentation from the capture config.
func (s *Service) Preset(name string) (protocol.Presentation, error) {
	p, ok := s.Config.Presets[name]
	if !ok {
		var names []string
		for n := range s.Config.Presets {
			names = append(names, n)
		}
		return nil, errorf(protocol.CappyPresentationRejected, "no preset %q in the capture config (have: %v)", name, names)
	}
	return p, nil
}

// Close stops the controller and the game it launched.
func (s *Service) Close() error {
	err := s.Controller.Close()
	if s.Launcher != nil {
		s.Launcher.Stop(3 * time.Second)
	}
	if s.endpointFile != "" {
		os.Remove(s.endpointFile)
	}
	return errors.Join(err, s.Store.Close())
}
