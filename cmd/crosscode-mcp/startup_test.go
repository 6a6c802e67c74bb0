package main

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"testing"
)

// TestInitIsCheap: the package initialisation of the binary, which every
// start pays (the hook before each edit, the stdio server), allocates
// little: no package's init more than 256 KiB, all of them together at most
// 1 MiB (about 400 KiB now, the test's own packages included). A
// dependency whose init does real work fails it: the JSON Schema library
// mcp-go links compiled five drafts' metaschemas there, 1.7 MB and 21,000
// allocations, until third_party's patch (third_party/README.md). The
// budget is in bytes, which GODEBUG=inittrace=1 reports the same on every
// run, not in time.
func TestInitIsCheap(t *testing.T) {
	cmd := command(t, "version")
	cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("version: %v %s", err, stderr.String())
	}
	line := regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
	const perPackage, all = 256 << 10, 1 << 20
	total, n := 0, 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		b, _ := strconv.Atoi(m[2])
		total += b
		n++
		if b > perPackage {
			t.Errorf("init of %s allocates %d bytes (%s allocations), over %d", m[1], b, m[3], perPackage)
		}
	}
	if n < 50 {
		t.Fatalf("only %d init lines in GODEBUG=inittrace=1's output: %s", n, stderr.String())
	}
	if total > all {
		t.Errorf("the package inits allocate %d bytes together, over %d", total, all)
	}
	t.Logf("%d package inits, %d bytes", n, total)
}
