-- redrive DLQ store, version 2: the exact wire form of each entry's
-- original message (its typed, ordered headers and, on RabbitMQ, its
-- properties), as the opaque, versioned bytes of broker/wire.Encode. NULL
-- for entries stored before: they replay with their string headers.

ALTER TABLE dlq_entries ADD COLUMN original_wire bytea;
ALTER TABLE dlq_entries_archive ADD COLUMN original_wire bytea;
