package wire

import "flag"

// WorkspaceFlags are the flags that locate the workspace, as the
// server's: `crosscode-mcp hook`, crosscode-hook, `hooks install` and
// `guard` read the same ones, with the same defaults.
type WorkspaceFlags struct {
	Repo, Data, Workspace, Actor, Service *string
}

// AddWorkspaceFlags defines them in fs, their defaults from the
// environment (getenv: CROSSCODE_DATA, _WORKSPACE, _ACTOR, _SERVICE).
func AddWorkspaceFlags(fs *flag.FlagSet, getenv func(string) string) WorkspaceFlags {
	return WorkspaceFlags{
		Repo:      fs.String("repo", "", "the repository (default: the working directory)"),
		Data:      fs.String("data", getenv("CROSSCODE_DATA"), "local state, as for the server"),
		Workspace: fs.String("workspace", getenv("CROSSCODE_WORKSPACE"), "workspace id, as for the server"),
		Actor:     fs.String("actor", getenv("CROSSCODE_ACTOR"), "who commits (default: git user.email)"),
		Service:   fs.String("service", getenv("CROSSCODE_SERVICE"), "the coordination service, in remote mode"),
	}
}
