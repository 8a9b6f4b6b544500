package broker

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// idBytes is the size of a message id before hex encoding.
const idBytes = 16

// idPool hands out random bytes for message ids: one crypto/rand read
// fills it with the bytes of idsPerRead ids, so that publishing does not
// read the system's random source once per message. Every id is still 128
// bits from crypto/rand, used once.
var idPool struct {
	mu  sync.Mutex
	buf [idsPerRead * idBytes]byte
	off int // bytes of buf already handed out
}

// idsPerRead is how many ids one crypto/rand read provides.
const idsPerRead = 256

func init() { idPool.off = len(idPool.buf) }

// NewMessageID returns a random message id (32 hex characters): 128 bits
// from crypto/rand, read in bulk.
func NewMessageID() string {
	var dst [2 * idBytes]byte
	return string(AppendMessageID(dst[:0]))
}

// AppendMessageID appends a new message id (as NewMessageID returns) to dst
// and returns the extended slice: for callers that need the id as bytes,
// such as a Kafka record header, without a string in between.
func AppendMessageID(dst []byte) []byte {
	idPool.mu.Lock()
	defer idPool.mu.Unlock()
	if idPool.off == len(idPool.buf) {
		_, _ = rand.Read(idPool.buf[:]) // never fails (crypto/rand, Go 1.24+)
		idPool.off = 0
	}
	src := idPool.buf[idPool.off : idPool.off+idBytes]
	dst = hex.AppendEncode(dst, src)
	clear(src) // an id handed out does not stay in memory here
	idPool.off += idBytes
	return dst
}
