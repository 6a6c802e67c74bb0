// Package procs reads what Linux's /proc says of processes, for the tests
// and benchmarks that look at the processes a server or a launcher left,
// or at what they cost: their parents, process groups, states and CPU
// time. Elsewhere (the Windows pass) there is no /proc: Stat fails and
// All is empty.
package procs

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// Proc is a process as /proc/PID/stat says it.
type Proc struct {
	PID, PPID, PGID int
	// Comm is the program's name (at most 15 bytes, as the kernel keeps it).
	Comm string
	// State is its state letter: "R", "S", "Z" (a zombie: it exited) ...
	State string
	// Ticks is its user and system CPU time, in clock ticks (1/100 s).
	Ticks int64
}

// Stat reads one process.
func Stat(pid int) (Proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, err
	}
	return parse(pid, string(b))
}

// parse reads a stat line: pid (comm) state ppid pgrp session tty tpgid
// flags minflt cminflt majflt cmajflt utime stime ...; comm may hold
// spaces and parentheses, so the fields are counted from its last ')'.
func parse(pid int, s string) (Proc, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Proc{}, errors.New("procs: a stat line without (comm)")
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return Proc{}, errors.New("procs: a short stat line")
	}
	p := Proc{PID: pid, Comm: s[open+1 : end], State: f[0]}
	p.PPID, _ = strconv.Atoi(f[1])
	p.PGID, _ = strconv.Atoi(f[2])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	p.Ticks = utime + stime
	return p, nil
}

// Alive reports whether pid is a process that has not exited (a zombie
// has).
func Alive(pid int) bool {
	p, err := Stat(pid)
	return err == nil && p.State != "Z"
}

// All reads every process now, by PID (one that ends meanwhile is left
// out).
func All() map[int]Proc {
	out := map[int]Proc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := Stat(pid); err == nil {
			out[pid] = p
		}
	}
	return out
}

// Descendants lists the processes of all below pid: its children, theirs,
// and so on.
func Descendants(all map[int]Proc, pid int) []int {
	kids := map[int][]int{}
	for _, p := range all {
		kids[p.PPID] = append(kids[p.PPID], p.PID)
	}
	var out []int
	for next := kids[pid]; len(next) > 0; {
		c := next[0]
		next = append(next[1:], kids[c]...)
		out = append(out, c)
	}
	return out
}
