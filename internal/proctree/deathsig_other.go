//go:build unix && !linux

package proctree

import "syscall"

// dieWithUs: only Linux can tie a child's life to its parent's.
func dieWithUs(*syscall.SysProcAttr) {}
