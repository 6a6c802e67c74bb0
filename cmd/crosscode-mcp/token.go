package main

import (
	"context"
	"fmt"
	"io"

	"github.com/crosscode/crosscode-mcp/store"
)

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usageError{msg: "usage: crosscode-mcp token create --workspace W [--data DIR] [--plan free|team|enterprise]"}
	}
	fs := newFlagSet("crosscode-mcp token create", stderr)
	data := fs.String("data", defaultHubData(), "directory of the service's SQLite database")
	workspace := fs.String("workspace", "", "workspace the token grants access to (created if new)")
	plan := fs.String("plan", "", "plan of a new workspace, or the new plan of an existing one: free (7 days of history), team (30, the default), enterprise (365)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *workspace == "" {
		return usageError{msg: "token create: --workspace is required"}
	}
	st, err := store.Open(ctx, hubDB(*data), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	tok, err := st.CreateToken(ctx, *workspace, *plan)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
