//go:build unix

package wire

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// SocketRoot is the user's directory of hook sockets: in
// $XDG_RUNTIME_DIR (the user's own, made by the system at login) when
// there is one, else /tmp/crosscode-mcp-UID. Not $TMPDIR: a client may
// give the processes it starts temporary directories of their own, and a
// hook must find its server.
func SocketRoot() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "crosscode-mcp")
	}
	return filepath.Join("/tmp", fmt.Sprintf("crosscode-mcp-%d", os.Getuid()))
}

// SocketFolder is the folder of the sockets of the servers on the
// database whose file is fi, made when create is set. Each directory on
// the way must be the user's alone: a directory another user made or can
// write to is not used.
func SocketFolder(fi os.FileInfo, create bool) (string, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no device and inode for the database")
	}
	root := SocketRoot()
	dir := filepath.Join(root, fmt.Sprintf("%x-%x", uint64(st.Dev), uint64(st.Ino)))
	for _, d := range []string{root, dir} {
		if create {
			os.Mkdir(d, 0o700)
		}
		if err := private(d); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// private says why dir is not a directory of the user's alone.
func private(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s is not this user's", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s is open to other users (mode %o)", dir, fi.Mode().Perm())
	}
	return nil
}

// isRefused: nothing listens on the socket (its server was killed).
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
