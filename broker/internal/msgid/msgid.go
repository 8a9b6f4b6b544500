// Package msgid is the generator of redrive's message ids, shared by
// broker.NewMessageID (applications) and driver.AppendMessageID
// (backends), so that both draw from one pool.
package msgid

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"sync"
)

// idBytes is the size of a message id before hex encoding.
const idBytes = 16

// idPool hands out random bytes for message ids: one read of src fills
// it with the bytes of idsPerRead ids. src is ChaCha8, a cryptographically
// strong generator, seeded from crypto/rand: reading the system's source
// for every id (vgetrandom, ≈ 2 ns a byte) was a seventh of building a
// Kafka record. Every id is 128 bits of its output, used once.
var idPool struct {
	mu  sync.Mutex
	src *rand.ChaCha8
	buf [idsPerRead * idBytes]byte
	off int // bytes of buf already handed out
}

// idsPerRead is how many ids one read of idPool.src provides.
const idsPerRead = 256

func init() {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (Go 1.24+)
	idPool.src = rand.NewChaCha8(seed)
	idPool.off = len(idPool.buf)
}

// Len is the length of a message id: 32 hex characters.
const Len = 2 * idBytes

// Append appends a new message id (32 hex characters: 128 bits from a
// ChaCha8 generator seeded from crypto/rand, read in bulk) to dst and
// returns the extended slice.
func Append(dst []byte) []byte {
	idPool.mu.Lock()
	defer idPool.mu.Unlock()
	if idPool.off == len(idPool.buf) {
		_, _ = idPool.src.Read(idPool.buf[:]) // never fails
		idPool.off = 0
	}
	src := idPool.buf[idPool.off : idPool.off+idBytes]
	dst = hex.AppendEncode(dst, src)
	clear(src) // an id handed out does not stay in memory here
	idPool.off += idBytes
	return dst
}
