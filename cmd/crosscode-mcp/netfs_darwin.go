package main

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Filesystem type names (statfs's f_fstypename) of network and FUSE
// filesystems, where SQLite's locking (and so local mode) is not reliable.
var networkTypes = map[string]string{"nfs": "NFS", "smbfs": "SMB", "afpfs": "AFP", "webdav": "WebDAV", "macfuse": "FUSE", "osxfuse": "FUSE", "cifs": "CIFS"}

// networkFS names the network or FUSE filesystem path is on, if it is.
func networkFS(path string) (string, bool) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return "", false
	}
	name, ok := networkTypes[strings.ToLower(unix.ByteSliceToString(st.Fstypename[:]))]
	return name, ok
}
