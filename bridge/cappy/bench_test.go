package cappy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStoreFileReplay100MiB: verifying (size, SHA-256) and storing a
// 100 MiB file replay into the content-addressed store, durably (fsync).
func BenchmarkStoreFileReplay100MiB(b *testing.B) {
	const size = 100 << 20
	dir := b.TempDir()
	src := filepath.Join(dir, "replay.bin")
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst := filepath.Join(b.TempDir(), sha)
		n, err := copyVerified(context.Background(), src, dst, size, sha)
		if err != nil || n != size {
			b.Fatal(n, err)
		}
	}
}
