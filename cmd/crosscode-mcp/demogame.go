package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
)

// runDemoGame is `crosscode-mcp demo-game`: Demo Arena, the built-in
// simulated game, as a Cappy adapter. Cappy launches it with
// CAPPY_ENDPOINT and CAPPY_SESSION_TOKEN set; it connects, publishes its
// scenarios and serves operations until the controller closes the
// connection or the process is interrupted.
func runDemoGame(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp demo-game", stderr)
	verbose := fs.Bool("v", false, "log debug details")
	pace := fs.Float64("pace", 0, "run scenarios at this multiple of real time (1: a simulated second takes one second); a test knob: by default they run as fast as they can")
	palette := fs.String("palette", "", "draw frames with this palette ("+strings.Join(demogame.Palettes, ", ")+"); a test knob: it changes the pictures, not the game")
	flash := fs.String("flash", "", "draw frames at these stretches of simulation time with the night palette, e.g. 500-1000,2500-3000 (ms); a test knob: it changes some pictures, not the game")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: crosscode-mcp demo-game [-v] [-palette NAME] [-flash MS-MS,...] [-pace X]\n\n"+
			"Runs Demo Arena, a simulated game, as a Cappy adapter. It reads CAPPY_ENDPOINT\n"+
			"and CAPPY_SESSION_TOKEN, which Cappy sets when it launches the game.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: fmt.Sprintf("demo-game: unexpected argument %q", fs.Arg(0))}
	}
	game := demogame.New()
	if *pace < 0 {
		return usageError{msg: fmt.Sprintf("demo-game: -pace %v: want a multiple of real time, 0 or more", *pace)}
	}
	game.Pace = *pace
	if err := game.SetPalette(*palette); err != nil {
		return usageError{msg: err.Error()}
	}
	if *flash != "" {
		spans, err := parseFlashes(*flash)
		if err != nil {
			return usageError{msg: "demo-game: -flash: " + err.Error()}
		}
		game.SetFlashes(spans)
	}
	endpoint, token := os.Getenv("CAPPY_ENDPOINT"), os.Getenv("CAPPY_SESSION_TOKEN")
	var missing []string
	if endpoint == "" {
		missing = append(missing, "CAPPY_ENDPOINT")
	}
	if token == "" {
		missing = append(missing, "CAPPY_SESSION_TOKEN")
	}
	if len(missing) > 0 {
		return fmt.Errorf("demo-game: %s not set: Cappy sets CAPPY_ENDPOINT and CAPPY_SESSION_TOKEN when it launches the game; "+
			"to start it yourself, take both from the capture endpoint file (cappy-endpoint.json) in the data directory", strings.Join(missing, " and "))
	}
	log := newLogger(stderr, *verbose)
	log.Info("demo-game: connecting", "endpoint", endpoint, "game", demogame.GameID)
	err := cappy.Run(ctx, game, &cappy.Options{Endpoint: endpoint, Token: token, Logger: log})
	if err != nil { // a *cappy.RejectError names the controller's code
		return fmt.Errorf("demo-game: %w", err)
	}
	fmt.Fprintln(stdout, "demo-game: disconnected")
	return nil
}

// parseFlashes reads -flash: "FROM-TO,..." in ms of simulation time.
func parseFlashes(s string) ([][2]int64, error) {
	var out [][2]int64
	for _, part := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.ParseInt(from, 10, 64)
		b, err2 := strconv.ParseInt(to, 10, 64)
		if !ok || err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q is not FROM-TO in ms (e.g. 500-1000)", part)
		}
		out = append(out, [2]int64{a, b})
	}
	return out, nil
}
