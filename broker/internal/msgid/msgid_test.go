package msgid

import (
	"encoding/hex"
	"sync"
	"testing"
)

func TestAppendUniqueAndHex(t *testing.T) {
	const goroutines, each = 4, 3 * idsPerRead // several refills, concurrently
	ids := make(chan string, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				ids <- string(Append(nil))
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := make(map[string]bool, goroutines*each)
	for id := range ids {
		if len(id) != 2*idBytes {
			t.Fatalf("id %q: length %d, want %d", id, len(id), 2*idBytes)
		}
		if _, err := hex.DecodeString(id); err != nil {
			t.Fatalf("id %q is not hex: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("id %q handed out twice", id)
		}
		seen[id] = true
	}
	if len(seen) != goroutines*each {
		t.Fatalf("%d distinct ids, want %d", len(seen), goroutines*each)
	}
}

func BenchmarkAppend(b *testing.B) {
	b.ReportAllocs()
	var buf [Len]byte
	for b.Loop() {
		_ = Append(buf[:0])
	}
}
