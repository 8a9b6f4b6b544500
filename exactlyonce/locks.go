package exactlyonce

import (
	"hash/fnv"
	"unicode/utf8"
)

// Advisory locks. Three kinds, each in its own space:
//
//   - per message, transaction-level, bigint form: the inbox's on
//     (worker, key) (inboxLock), the outbox's on (topic, key) (keyHash);
//     the inputs are prefixed by kind and schema, so that they meet no
//     other lock but by a 64-bit hash collision, which only makes one
//     transaction wait for another;
//   - session-level, two-int form, key1 = a hash of the schema and the
//     kind: the relays' membership slots (members) and the outbox shards
//     they own (shards);
//   - the migrations' and the partition maintenance's (hashtextextended
//     of a name and the schema, in SQL).

// Shards is the number of shards of the outbox: the most relays that can
// publish at once. A row's shard is a hash of its topic and key, fixed
// when it is written.
const Shards = 64

// lockSpace is the key1 of a schema's session locks.
type lockSpace struct {
	schema  string
	members int32
	shards  int32
}

func newLockSpace(schema string) lockSpace {
	return lockSpace{schema: schema, members: hash32("redrive/outbox/relays/" + schema), shards: hash32("redrive/outbox/shards/" + schema)}
}

func hash32(s string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int32(h.Sum32())
}

// keyHash is the hash of an outbox message's (topic, key): its shard is
// keyHash % Shards, and a keyed message's transaction locks it. A nil key
// and an empty one are the same key.
func keyHash(schema, topic string, key []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("outbox\x00"))
	_, _ = h.Write([]byte(schema))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(topic))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(key)
	return h.Sum64()
}

// inboxLock is the transaction-level lock key of (worker, key) in the
// inbox.
func inboxLock(schema, worker, key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("inbox\x00"))
	_, _ = h.Write([]byte(schema))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(worker))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64())
}

// maxKeyLen is the longest inbox key or worker name kept as it is; a
// longer one (a Kafka header can be megabytes), or one that is not valid
// UTF-8 or holds a NUL (a text column refuses both), is kept as the
// DerivedMessageID of its bytes, prefixed "sha256:".
const maxKeyLen = 200

// storedKey is k as the inbox stores it (see maxKeyLen).
func storedKey(k string) string {
	if len(k) <= maxKeyLen && utf8.ValidString(k) && !containsNUL(k) {
		return k
	}
	return "sha256:" + digest(k)
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
