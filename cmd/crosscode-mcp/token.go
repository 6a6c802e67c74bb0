package main

import (
	"context"
	"fmt"
	"io"
)

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usageError{msg: "usage: crosscode-mcp token create --workspace W [--data DIR | --db URL] [--plan free|team|enterprise]"}
	}
	fs := newFlagSet("crosscode-mcp token create", stderr)
	data, db := hubStoreFlags(fs)
	workspace := fs.String("workspace", "", "workspace the token grants access to (created if new)")
	plan := fs.String("plan", "", "plan of a new workspace, or the new plan of an existing one: free (7 days of history), team (30, the default), enterprise (365)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *workspace == "" {
		return usageError{msg: "token create: --workspace is required"}
	}
	if err := oneStore(fs, *db); err != nil {
		return err
	}
	st, _, err := openHubStore(ctx, *data, *db, newLogger(stderr, false))
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
