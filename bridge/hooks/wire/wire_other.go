//go:build !unix

package wire

import (
	"errors"
	"os"
)

// SocketFolder: hooks are served on unix systems only; on Windows a hook
// opens the database itself.
func SocketFolder(os.FileInfo, bool) (string, error) {
	return "", errors.New("hooks are served by the MCP server on unix systems only")
}

func isRefused(error) bool { return false }
