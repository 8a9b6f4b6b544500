package dlq

import "github.com/redrive/redrive/broker"

// DefaultRetention is the retention of a DLQ without one configured.
const DefaultRetention = broker.DefaultDLQRetention

// Policy is a DLQ's settings, from the workers' dlq configuration: the
// options the workers subscribe with (broker.DLQOptions), one type. Its
// Retention is how long records are kept before the archiver moves them
// to the archive.
type Policy = broker.DLQOptions
