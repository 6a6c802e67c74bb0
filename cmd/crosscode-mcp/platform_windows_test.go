package main

import (
	"path/filepath"
	"testing"
)

// TestDefaultHubData: on Windows the service keeps its data in
// %LOCALAPPDATA% unless CROSSCODE_HUB_DATA says where.
func TestDefaultHubData(t *testing.T) {
	t.Setenv("CROSSCODE_HUB_DATA", "")
	t.Setenv("LOCALAPPDATA", `C:\Users\me\AppData\Local`)
	if got, want := defaultHubData(), filepath.Join(`C:\Users\me\AppData\Local`, "crosscode-mcp", "hub"); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	t.Setenv("CROSSCODE_HUB_DATA", `D:\hub`)
	if got := defaultHubData(); got != `D:\hub` {
		t.Errorf("with CROSSCODE_HUB_DATA: %s", got)
	}
}

// TestDataDirOnALocalDisk: the test's temp dir is not taken for a network
// drive.
func TestDataDirOnALocalDisk(t *testing.T) {
	if name, ok := networkFS(t.TempDir()); ok {
		t.Errorf("the test's temp dir is taken for %s", name)
	}
}
