package broker

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"time"
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

// NewMessageID returns a random message id (32 hex characters): 128 bits
// from a ChaCha8 generator seeded from crypto/rand, read in bulk.
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
		_, _ = idPool.src.Read(idPool.buf[:]) // never fails
		idPool.off = 0
	}
	src := idPool.buf[idPool.off : idPool.off+idBytes]
	dst = hex.AppendEncode(dst, src)
	clear(src) // an id handed out does not stay in memory here
	idPool.off += idBytes
	return dst
}

// DerivedMessageID returns a message id (32 hex characters, like
// NewMessageID's) derived from parts: the first 128 bits of a SHA-256 of
// the parts, each prefixed by its length, so that the same parts always
// give the same id and different ones practically never do. The backends
// give it to a message that carries no id of its own (a producer other
// than redrive), so that its every delivery, retry copy, dead letter and
// replay has the same one.
func DerivedMessageID(parts ...[]byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write(p)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:idBytes])
}

// RecordMessageID is the message id of a Kafka record that carries no
// x-redrive-message-id header (written by a producer other than redrive):
// a DerivedMessageID of where it was first written (topic, partition,
// offset) and its timestamp, which a topic deleted and created again does
// not repeat with its offsets. Its deliveries leave Delivery.ID empty
// (the consume path derives nothing); its retry copies, dead letters and
// replays carry this id, and [DeliveryID] gives it for the record itself.
func RecordMessageID(topic string, partition int32, offset int64, ts time.Time) string {
	var b [3 * binary.MaxVarintLen64]byte
	n := binary.PutVarint(b[:], int64(partition))
	n += binary.PutVarint(b[n:], offset)
	n += binary.PutVarint(b[n:], ts.UnixMilli())
	return DerivedMessageID([]byte("kafka"), []byte(topic), b[:n])
}

// DeliveryID returns the stable id of d's message: d.ID, or, for a Kafka
// record written without one (Partition >= 0), its [RecordMessageID].
// It is the same on every delivery of the message, its retries and its
// replays. Empty only for a message of another backend that has no id.
//
// On RabbitMQ d.ID is always set: a message published without the
// message-id property gets a DerivedMessageID of its content (body,
// properties and headers), which its copies keep; two such messages of
// identical content have the same id.
func DeliveryID(d *Delivery) string {
	if d.ID != "" || d.Partition < 0 {
		return d.ID
	}
	return RecordMessageID(d.Topic, d.Partition, d.Offset, d.Timestamp)
}
