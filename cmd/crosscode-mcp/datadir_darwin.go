package main

import "os"

// userDataDir is ~/Library/Application Support ("" when there is no home).
func userDataDir() string {
	d, _ := os.UserConfigDir()
	return d
}
