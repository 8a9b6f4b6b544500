-- redrive DLQ store, version 5: the failure fingerprint of each entry
-- (dlq.Fingerprint: error class, normalised error message, worker), which
-- the store computes once when it stores an entry, and an index to group
-- a DLQ's entries by it (Store.Groups) and list one group (group=).
--
-- Online: adding a column with a constant default rewrites nothing; the
-- entries stored before keep '' until pgstore's backfill
-- (Store.BackfillFingerprints, run in the background by Open) computes
-- theirs, in batches by seq, each a short transaction: resumable after a
-- stop, by any instance (it looks for fingerprint = '').

ALTER TABLE dlq_entries ADD COLUMN fingerprint text NOT NULL DEFAULT '';
ALTER TABLE dlq_entries_archive ADD COLUMN fingerprint text NOT NULL DEFAULT '';

-- Groups reads (dlq, fingerprint) with the status and time of each entry
-- from the index alone; a group's listing walks it in seq order.
CREATE INDEX dlq_entries_fingerprint ON dlq_entries (dlq, fingerprint, seq) INCLUDE (status, received_at);
-- The backfill finds the entries it has yet to fingerprint.
CREATE INDEX dlq_entries_no_fingerprint ON dlq_entries (seq) WHERE fingerprint = '';
CREATE INDEX dlq_entries_archive_no_fingerprint ON dlq_entries_archive (seq) WHERE fingerprint = '';
