package broker

import "github.com/redrive/redrive/broker/internal/msgid"

// NewMessageID returns a random message id (32 hex characters): 128 bits
// from a ChaCha8 generator seeded from crypto/rand, read in bulk.
func NewMessageID() string {
	var dst [msgid.Len]byte
	return string(msgid.Append(dst[:0]))
}
