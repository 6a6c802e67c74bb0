//go:build !windows

package sysdeps

// UnderWine reports whether this Windows program runs under Wine: never,
// for a program of another OS.
func UnderWine() bool { return false }
