// Package cputime reads the CPU time this process has used, for benchmarks
// on a shared machine: wall time depends on the load, CPU time much less.
package cputime

import "time"

// Self is the user and system CPU time this process has used so far.
func Self() time.Duration { return self() }

// WithChildren is Self plus the CPU time of the children this process has
// waited for (ffmpeg, for example). Windows keeps no such total: there it
// is Self.
func WithChildren() time.Duration { return self() + children() }
