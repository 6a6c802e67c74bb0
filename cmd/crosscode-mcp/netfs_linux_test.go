package main

import (
	"testing"
)

func TestDoctorNetworkFilesystems(t *testing.T) {
	for magic, name := range map[int64]string{0x6969: "NFS", 0xFF534D42: "CIFS", 0x65735546: "FUSE"} {
		if networkMagic[magic] != name {
			t.Errorf("%#x should be %s", magic, name)
		}
	}
	if name, ok := networkFS(t.TempDir()); ok {
		t.Errorf("the test's temp dir is taken for a network filesystem (%s)", name)
	}
}
