package main

import "syscall"

// Filesystem magic numbers of network and FUSE filesystems, where SQLite's
// locking (and so local mode) is not reliable.
var networkMagic = map[int64]string{0x6969: "NFS", 0xFF534D42: "CIFS", 0xFE534D42: "SMB2", 0x517B: "SMB", 0x65735546: "FUSE", 0x564c: "NCP", 0x01021997: "9P", 0x6B414653: "AFS", 0x47504653: "GPFS", 0x5346414F: "OpenAFS", 0x1badface: "CephFS", 0x0BD00BD0: "Lustre"}

// networkFS names the network or FUSE filesystem path is on, if it is.
func networkFS(path string) (string, bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(path, &st) != nil {
		return "", false
	}
	name, ok := networkMagic[int64(st.Type)]
	return name, ok
}
