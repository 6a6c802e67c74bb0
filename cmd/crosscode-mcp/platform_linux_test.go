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

// TestDefaultHubData: the service keeps its data in the user's data dir
// unless CROSSCODE_HUB_DATA says where.
func TestDefaultHubData(t *testing.T) {
	t.Setenv("CROSSCODE_HUB_DATA", "")
	t.Setenv("XDG_DATA_HOME", "/xdg/data")
	if got := defaultHubData(); got != "/xdg/data/crosscode-mcp/hub" {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/me")
	if got := defaultHubData(); got != "/home/me/.local/share/crosscode-mcp/hub" {
		t.Errorf("with HOME only: %s", got)
	}
	t.Setenv("CROSSCODE_HUB_DATA", "/srv/hub")
	if got := defaultHubData(); got != "/srv/hub" {
		t.Errorf("with CROSSCODE_HUB_DATA: %s", got)
	}
}
