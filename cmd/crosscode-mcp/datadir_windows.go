package main

import "os"

// userDataDir is %LOCALAPPDATA% (the machine's own data, not roamed).
func userDataDir() string { return os.Getenv("LOCALAPPDATA") }
