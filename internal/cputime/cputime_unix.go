//go:build unix

package cputime

import (
	"syscall"
	"time"
)

func usage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func self() time.Duration { return usage(syscall.RUSAGE_SELF) }

func children() time.Duration { return usage(syscall.RUSAGE_CHILDREN) }
