// Package relay delivers a worker's messages to an HTTP endpoint, so that
// a handler written in any language gets redrive's retries, delays, kill
// switch, operator pause, poison-pill protection and exact dead letters.
// It is what `redrive relay` runs (docs/relay.md is the guide, with a
// complete endpoint in Python).
//
// A Relay (Load, Parse) consumes with every configured worker that has an
// endpoint, on the worker runtime (package worker): the same queues or
// consumer groups, retry mode and schedule, kill switch, pause,
// heartbeats under the worker's name, max age and claims as a Go worker
// of the same configuration. Its handler is an Endpoint: each message is
// one POST, in the CloudEvents HTTP binary mode, and the answer decides
// as a Go handler's error would.
//
// # The request
//
// The body is the message's payload, byte for byte (empty for an empty
// payload). The headers:
//
//	ce-specversion            1.0
//	ce-id                     the message id; a Kafka record without one: <topic>-<partition>-<offset>
//	ce-source                 /redrive/<the worker's topic>
//	ce-type                   redrive.message
//	ce-time                   the message's timestamp (RFC 3339), when it has one
//	Content-Type              endpoint.content_type (default application/octet-stream)
//	redrive-worker            the worker
//	redrive-attempt           1 on the first delivery, 2 on the first retry, ...; 1 after a replay
//	redrive-first-failure-at  RFC 3339 UTC, after a failure
//	redrive-last-failure-at   RFC 3339 UTC, after a failure
//	redrive-last-error        the previous failure's text
//	redrive-last-error-class  its class (http.503, http.timeout, ...)
//	redrive-replayed-from     the dead letter a replay came from
//	redrive-redelivered       true when the broker delivers the message again
//	redrive-key               the message key, when it has one (present and empty: an empty key)
//	redrive-header-<name>     each message header whose name is a-z, 0-9 and "-" (not beginning "hex-")
//	redrive-header-hex-<hex>  each other message header: the hexadecimal of its name's bytes
//	traceparent, tracestate   the W3C trace context: the handler attempt's span with tracing on,
//	                          else the message's own when valid
//	Authorization             Bearer <endpoint.bearer_token>, when set
//
// Every value that comes from the message (ce-id, redrive-last-error*,
// redrive-replayed-from, redrive-key, redrive-header-*) is percent-encoded
// as the CloudEvents HTTP binding encodes strings (Encode): each byte
// outside the printable ASCII U+0021–U+007E, and space, '"' and '%',
// becomes %XY. Any bytes survive, binary and non-ASCII ones included;
// Decode and ReadRequest undo it. HTTP header names are case-insensitive
// and proxies drop names with "_" or ".": HeaderName keeps any name.
// Redrive's own bookkeeping headers (x-redrive-*) are not forwarded
// except as the story above. RabbitMQ message properties other than the
// message id and timestamp are not forwarded (a Go handler does not see
// them either). The headers may take at most endpoint.max_header_bytes: a
// message that needs more is dead-lettered at once (HeadersError), whole.
//
// Nothing a message carries decides where the POST goes: the URL is the
// configuration's, and redirects are followed only when configured (307
// and 308, never from https to http).
//
// # The answer
//
//	answer                                          the handler returns             kill switch
//	2xx                                             nil: done                       success
//	a JSON body {"status": "DROP"} (any status)     Permanent: dead-lettered now    not counted
//	a 2xx with a JSON body {"status": "RETRY"}      an error: retried by schedule   transient
//	a status of endpoint.permanent_statuses         Permanent: dead-lettered now    not counted
//	  (default 400, 404, 410, 422)
//	429 or 503 with Retry-After (seconds or date)   RetryAfter(min(it, the longest  transient
//	                                                back-off delay))
//	any other status (5xx, other 4xx, 3xx)          an error: retried by schedule   transient
//	no answer within endpoint.timeout               an error: retried by schedule   transient
//	no answer (refused, reset, DNS, TLS)            an error: retried by schedule   transient
//	the relay stops during the POST                 Requeue: back at once, same     not counted
//	                                                attempt
//
// A status failure's text (the dead letter's error) is "HTTP <code>
// <reason>: " and the response body's first MaxErrorBody bytes, escaped
// (Escape); its class is "http.<code>" (StatusError), or "http.timeout",
// "http.unreachable" (TransportError), so that retry.non_retriable can
// name one. At most MaxResponseBytes of a body are read. An endpoint
// that is down is a downstream outage like any other: with the worker's
// kill switch on, the worker pauses instead of spending retries and
// dead-lettering.
//
// Each Endpoint counts its POSTs by Outcome and their latency
// (MetricRequests, MetricRequestDuration, with a Registerer) and says so
// in its worker's heartbeats (Stats; the console's Workers page shows it).
package relay
