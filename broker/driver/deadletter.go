package driver

import (
	"context"
	"errors"
)

// DeadLetter is one message read from a dead-letter queue by a Source.
type DeadLetter struct {
	// DLQ is the dead-letter queue (RabbitMQ) or topic (Kafka) it was read
	// from.
	DLQ string
	// ID is the backend's id of the dead letter when it has one an
	// operator can use (its id scheme: Kafka "{partition}-{offset}", the
	// DLQ record's coordinates); empty when the store assigns one
	// (dlq.NewID: RabbitMQ). It must match
	// [A-Za-z0-9][A-Za-z0-9._-]{0,127}.
	ID string
	// Identity identifies this dead-lettering of this message, so that a
	// redelivered dead letter is stored once (at most 1024 bytes): Kafka
	// "<partition>-<offset>@<record ms>" (the record time tells a recreated
	// DLQ topic's offsets from old ones); RabbitMQ a digest of the message
	// id, the failure time and the reason.
	Identity string
	// Entry is the dead letter's view. When the message could not be
	// decoded, Entry.Reason is ReasonUnparseable and Entry.OriginalValue
	// holds the raw bytes.
	Entry Entry
}

// ReasonUnparseable marks an entry whose message could not be decoded; it
// is stored raw, never dropped.
const ReasonUnparseable Reason = "unparseable"

// Source delivers the messages of dead-letter queues: the DLQ keeper
// (keeper.Keeper) reads through it. A backend's Broker implements it.
type Source interface {
	// ConsumeDeadLetters calls handle for every message of the named DLQs
	// and acknowledges (or commits) a message only after handle returned nil
	// for it. When handle fails, the message is not acknowledged and is
	// offered again after a back-off; later messages wait (nothing is
	// skipped). It blocks until ctx ends.
	ConsumeDeadLetters(ctx context.Context, dlqs []string, handle func(context.Context, DeadLetter) error) error
}

// BatchSource is a Source that hands the keeper several dead letters at
// once, so that it stores them in one batch (Store.InsertBatch). The
// built-in backends implement it; the keeper uses it when its Source
// does.
type BatchSource interface {
	Source
	// ConsumeDeadLetterBatches calls handle with the messages of the named
	// DLQs that are at hand, a batch at a time (the source bounds its
	// count and bytes), and acknowledges (or commits) each message only
	// after handle returned a nil error for it: handle returns one error
	// per dead letter, in order. The messages whose error is not nil are
	// offered again after a back-off, the others are not; on Kafka, the
	// records behind a failing one in its partition are not committed
	// before it is stored. It blocks until ctx ends.
	ConsumeDeadLetterBatches(ctx context.Context, dlqs []string, handle func(context.Context, []DeadLetter) []error) error
}

// ErrNotTried is the error HandleEach gives the dead letters of a batch
// after one whose handling failed: they were not handed to the handler,
// and are offered again with it.
var ErrNotTried = errors.New("driver: not handled: an earlier dead letter of its batch failed")

// HandleEach adapts a handler of one dead letter to a batch: it calls
// handle for each in order and stops at the first failure (the later ones
// get ErrNotTried), so that a Source built on batches keeps the order of
// ConsumeDeadLetters.
func HandleEach(handle func(context.Context, DeadLetter) error) func(context.Context, []DeadLetter) []error {
	return func(ctx context.Context, dls []DeadLetter) []error {
		errs := make([]error, len(dls))
		for i, dl := range dls {
			if errs[i] = handle(ctx, dl); errs[i] != nil {
				for j := i + 1; j < len(dls); j++ {
					errs[j] = ErrNotTried
				}
				break
			}
		}
		return errs
	}
}
