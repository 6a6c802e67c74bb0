//go:build !unix

package hooks

import (
	"errors"
	"os"
)

// socketFolder: hooks are served on unix systems only; on Windows a hook
// opens the database itself.
func socketFolder(os.FileInfo, bool) (string, error) {
	return "", errors.New("hooks are served by the MCP server on unix systems only")
}

func isRefused(error) bool { return false }
