package dlq

import "github.com/redrive/redrive/broker/driver"

// The dead-letter view a backend produces and the interfaces it
// implements for the keeper and for replays are broker/driver's, the seam
// between redrive and its backends; dlq names them too, for the
// applications and stores that use its Store, the keeper (dlq/keeper) and
// the operations (dlq/operate).
type (
	// Entry is one dead letter, whichever backend it came from
	// (driver.Entry).
	Entry = driver.Entry
	// DeadLetter is one message read from a dead-letter queue by a Source
	// (driver.DeadLetter).
	DeadLetter = driver.DeadLetter
	// Source delivers the messages of dead-letter queues to the keeper
	// (driver.Source).
	Source = driver.Source
	// BatchSource hands the keeper several dead letters at once
	// (driver.BatchSource).
	BatchSource = driver.BatchSource
	// Republisher puts a dead letter back where its Route says
	// (driver.Republisher).
	Republisher = driver.Republisher
	// Route is where the replays of one configured worker's dead letters
	// go (driver.Route).
	Route = driver.Route
	// Router names a backend's DLQs and replay routes (driver.Router).
	Router = driver.Router
)

// ErrOriginMismatch is wrapped when an entry's recorded origin disagrees
// with the route its DLQ's configuration gives (driver.ErrOriginMismatch).
var ErrOriginMismatch = driver.ErrOriginMismatch

// ReasonUnparseable marks an entry whose message could not be decoded;
// it is stored raw, never dropped (driver.ReasonUnparseable).
const ReasonUnparseable = driver.ReasonUnparseable
