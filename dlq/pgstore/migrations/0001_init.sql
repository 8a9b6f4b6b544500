-- redrive DLQ store, version 1: entries, their archive, the audit log.
--
-- Keys, values and headers are bytea (byte for byte; NULL = nil). Headers
-- are a JSON array of [name, value] pairs, each base64, so that binary
-- names and values survive. Text columns hold valid UTF-8 without NUL (the
-- application cleans them).

CREATE TABLE dlq_entries (
    seq                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dlq                text        NOT NULL,
    id                 text        NOT NULL,
    identity           text        NOT NULL,
    broker             text        NOT NULL CHECK (broker IN ('rabbitmq', 'kafka')),
    severity           text        NOT NULL,
    status             text        NOT NULL CHECK (status IN ('pending', 'replaying', 'replayed', 'discarded')),
    status_changed_at  timestamptz NOT NULL,
    status_by          text        NOT NULL DEFAULT '',
    version            bigint      NOT NULL DEFAULT 1,
    received_at        timestamptz NOT NULL,
    message_id         text        NOT NULL DEFAULT '',
    original_topic     text        NOT NULL DEFAULT '',
    original_partition integer     NOT NULL DEFAULT -1,
    original_offset    bigint      NOT NULL DEFAULT -1,
    original_key       bytea,
    original_value     bytea,
    original_headers   bytea,
    error_class        text        NOT NULL DEFAULT '',
    error_message      text        NOT NULL DEFAULT '',
    stack_trace        text        NOT NULL DEFAULT '',
    reason             text        NOT NULL DEFAULT '',
    retry_count        integer     NOT NULL DEFAULT 0,
    worker             text        NOT NULL DEFAULT '',
    worker_instance    text        NOT NULL DEFAULT '',
    source             text        NOT NULL DEFAULT '',
    first_failure_at   timestamptz,
    last_failure_at    timestamptz,
    CONSTRAINT dlq_entries_identity_key UNIQUE (dlq, identity),
    CONSTRAINT dlq_entries_id_key UNIQUE (dlq, id)
);

-- Listing a DLQ by status (and the pending counts), by time, in order.
CREATE INDEX dlq_entries_dlq_status_seq ON dlq_entries (dlq, status, seq);
CREATE INDEX dlq_entries_dlq_seq ON dlq_entries (dlq, seq);
CREATE INDEX dlq_entries_dlq_received ON dlq_entries (dlq, received_at);
CREATE INDEX dlq_entries_error_class ON dlq_entries (dlq, error_class, seq);
-- Reconcile looks for entries left replaying, across DLQs.
CREATE INDEX dlq_entries_replaying ON dlq_entries (seq) WHERE status = 'replaying';

-- Entries past their DLQ's retention. status keeps the status they had
-- when archived; they read as "archived".
CREATE TABLE dlq_entries_archive (
    LIKE dlq_entries INCLUDING DEFAULTS,
    archived_at timestamptz NOT NULL,
    PRIMARY KEY (seq),
    CONSTRAINT dlq_entries_archive_identity_key UNIQUE (dlq, identity),
    CONSTRAINT dlq_entries_archive_id_key UNIQUE (dlq, id)
);

CREATE INDEX dlq_entries_archive_dlq_seq ON dlq_entries_archive (dlq, seq);
CREATE INDEX dlq_entries_archive_dlq_received ON dlq_entries_archive (dlq, received_at);

-- Every replay and discard, written in the transaction of the status change.
CREATE TABLE audit_log (
    seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text        NOT NULL,
    action      text        NOT NULL,
    dlq         text        NOT NULL,
    entry_id    text        NOT NULL,
    from_status text        NOT NULL,
    to_status   text        NOT NULL,
    reason      text        NOT NULL DEFAULT ''
);

CREATE INDEX audit_log_entry ON audit_log (dlq, entry_id, seq);
CREATE INDEX audit_log_at ON audit_log (at);
