package broker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/redrive/redrive/broker/internal/msgid"
)

// NewMessageID returns a random message id (32 hex characters): 128 bits
// from a ChaCha8 generator seeded from crypto/rand, read in bulk.
func NewMessageID() string {
	var dst [msgid.Len]byte
	return string(msgid.Append(dst[:0]))
}

// DerivedMessageID returns a message id (32 hex characters, like
// NewMessageID's) derived from parts: the first 128 bits of a SHA-256 of
// the parts, each prefixed by its length, so that the same parts always
// give the same id and different ones practically never do. The backends
// give it to a message that carries no id of its own (a producer other
// than redrive), so that its every delivery, retry copy, dead letter and
// replay has the same one; an application may derive its own ids with it
// (an outbox message's from its business key).
func DerivedMessageID(parts ...[]byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write(p)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:msgid.Len/2])
}

// StableID returns the stable id of d's message: d.ID, or, for a message
// written without one, the id its backend derives for it (Kafka: from
// where the record was first written, kafka.RecordMessageID), computed
// when asked so that the consume path derives nothing. It is the same on
// every delivery of the message, its retries and its replays. Empty only
// for a message whose backend has no id for it.
//
// On RabbitMQ d.ID is always set: a message published without the
// message-id property gets a DerivedMessageID of its content (body,
// properties and headers), which its copies keep; two such messages of
// identical content have the same id.
func (d *Delivery) StableID() string {
	if d.ID != "" || d.derivedID == nil {
		return d.ID
	}
	return d.derivedID(d)
}
