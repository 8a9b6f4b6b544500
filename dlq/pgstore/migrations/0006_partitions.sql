-- redrive DLQ store, version 6: entries partitioned by arrival week.
--
-- dlq_entries and dlq_entries_archive become PARTITION BY LIST (part).
-- Partition 0 ("kept", dlq_entries_p0) is the table of version 5, with
-- its rows, indexes and constraints, attached as it is; it also holds the
-- entries inserted when their week's partition does not exist and those
-- moved out of a week that went to the archive (kept forever, replaying).
-- Partition N > 0 (dlq_entries_wN) holds the entries whose id (dlq.NewID:
-- 48 bits of milliseconds first) falls in week N since the Unix epoch
-- (milliseconds / 604800000); pgstore creates them ahead (Store.Maintain).
-- A lookup by (dlq, id) reads partitions 0 and week(id) only. Archiving a
-- past week is DETACH PARTITION then ATTACH PARTITION to the archive,
-- which is partitioned the same way.
--
-- (dlq, identity) stays unique across partitions: partition 0 keeps its
-- unique index, and dlq_keys holds the identities of every entry inserted
-- into a week partition, written by the statement of the insert.
--
-- Online: before this transaction, pgstore (migrate.go, prepartition) adds
-- the column part (DEFAULT 0: no rewrite) and a CHECK (part = 0) to both
-- tables, NOT VALID, then validates it outside any transaction (a scan
-- under SHARE UPDATE EXCLUSIVE: writers go on). This transaction only
-- renames, creates empty parents and attaches the old tables, which the
-- validated CHECK lets PostgreSQL do without scanning them; matching
-- indexes are attached, not built. No row is copied.

LOCK TABLE dlq_entries, dlq_entries_archive IN ACCESS EXCLUSIVE MODE;

-- seq: a sequence of the parent's, continuing the identity's.
CREATE SEQUENCE dlq_entries_seq AS bigint;
SELECT setval('dlq_entries_seq', s.last_value, s.is_called)
FROM dlq_entries_seq_seq s;
ALTER TABLE dlq_entries ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE dlq_entries ALTER COLUMN seq SET DEFAULT nextval('dlq_entries_seq');

-- The counts triggers move to the parents.
DROP TRIGGER dlq_entries_counts_insert ON dlq_entries;
DROP TRIGGER dlq_entries_counts_update ON dlq_entries;
DROP TRIGGER dlq_entries_counts_delete ON dlq_entries;
DROP TRIGGER dlq_entries_archive_counts_insert ON dlq_entries_archive;
DROP TRIGGER dlq_entries_archive_counts_delete ON dlq_entries_archive;

ALTER TABLE dlq_entries RENAME TO dlq_entries_p0;
ALTER INDEX dlq_entries_dlq_status_seq RENAME TO dlq_entries_p0_dlq_status_seq;
ALTER INDEX dlq_entries_dlq_seq RENAME TO dlq_entries_p0_dlq_seq;
ALTER INDEX dlq_entries_dlq_received RENAME TO dlq_entries_p0_dlq_received;
ALTER INDEX dlq_entries_error_class RENAME TO dlq_entries_p0_error_class;
ALTER INDEX dlq_entries_replaying RENAME TO dlq_entries_p0_replaying;
ALTER INDEX dlq_entries_fingerprint RENAME TO dlq_entries_p0_fingerprint;
ALTER INDEX dlq_entries_no_fingerprint RENAME TO dlq_entries_p0_no_fingerprint;

ALTER TABLE dlq_entries_archive RENAME TO dlq_entries_archive_p0;
ALTER INDEX dlq_entries_archive_dlq_seq RENAME TO dlq_entries_archive_p0_dlq_seq;
ALTER INDEX dlq_entries_archive_dlq_received RENAME TO dlq_entries_archive_p0_dlq_received;
ALTER INDEX dlq_entries_archive_no_fingerprint RENAME TO dlq_entries_archive_p0_no_fingerprint;

CREATE TABLE dlq_entries (
    LIKE dlq_entries_p0 INCLUDING DEFAULTS,
    CONSTRAINT dlq_entries_broker_check CHECK (broker IN ('rabbitmq', 'kafka')),
    CONSTRAINT dlq_entries_status_check CHECK (status IN ('pending', 'replaying', 'replayed', 'discarded'))
) PARTITION BY LIST (part);
ALTER SEQUENCE dlq_entries_seq OWNED BY dlq_entries.seq;

CREATE INDEX dlq_entries_dlq_status_seq ON dlq_entries (dlq, status, seq);
CREATE INDEX dlq_entries_dlq_seq ON dlq_entries (dlq, seq);
CREATE INDEX dlq_entries_dlq_received ON dlq_entries (dlq, received_at);
CREATE INDEX dlq_entries_error_class ON dlq_entries (dlq, error_class, seq);
CREATE INDEX dlq_entries_replaying ON dlq_entries (seq) WHERE status = 'replaying';
CREATE INDEX dlq_entries_fingerprint ON dlq_entries (dlq, fingerprint, seq) INCLUDE (status, received_at);
CREATE INDEX dlq_entries_no_fingerprint ON dlq_entries (seq) WHERE fingerprint = '';

ALTER TABLE dlq_entries ATTACH PARTITION dlq_entries_p0 FOR VALUES IN (0);

CREATE TABLE dlq_entries_archive (LIKE dlq_entries_archive_p0 INCLUDING DEFAULTS) PARTITION BY LIST (part);
CREATE INDEX dlq_entries_archive_dlq_seq ON dlq_entries_archive (dlq, seq);
CREATE INDEX dlq_entries_archive_dlq_received ON dlq_entries_archive (dlq, received_at);
CREATE INDEX dlq_entries_archive_no_fingerprint ON dlq_entries_archive (seq) WHERE fingerprint = '';
ALTER TABLE dlq_entries_archive ATTACH PARTITION dlq_entries_archive_p0 FOR VALUES IN (0);

-- Statement triggers on a partitioned table see the rows of every
-- partition (a row moved between partitions by an UPDATE is in its old
-- and new transition tables); ATTACH and DETACH fire none: pgstore
-- adjusts dlq_counts itself when it moves a partition (archivePartition).
CREATE TRIGGER dlq_entries_counts_insert AFTER INSERT ON dlq_entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dlq_counts_apply();
CREATE TRIGGER dlq_entries_counts_update AFTER UPDATE ON dlq_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dlq_counts_apply();
CREATE TRIGGER dlq_entries_counts_delete AFTER DELETE ON dlq_entries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dlq_counts_apply();
CREATE TRIGGER dlq_entries_archive_counts_insert AFTER INSERT ON dlq_entries_archive
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dlq_counts_apply('archived');
CREATE TRIGGER dlq_entries_archive_counts_delete AFTER DELETE ON dlq_entries_archive
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dlq_counts_apply('archived');

-- The identities of the entries of week partitions (and of those they
-- had before going to the archive), unique per DLQ.
CREATE TABLE dlq_keys (
    dlq      text NOT NULL,
    identity text NOT NULL,
    PRIMARY KEY (dlq, identity)
);
