// Package bench holds the cross-package benchmarks recorded in
// BENCHMARKS.md: the coordination service over real HTTP and WebSockets on
// loopback, with a real SQLite file and durable commits.
package bench
