-- redrive DLQ store, version 8: the (dlq, received_at) index of the live
-- entries covers seq, status, fingerprint and part, so that a page of a time
-- window (the console's "last hour", a job bounded by time) and the
-- arrivals charts read the window from the index alone: the page's seqs
-- are chosen there (a top-N of the window's index tuples) and only the
-- page's rows are read from the table, instead of every entry of the
-- window being fetched and sorted by seq.
--
-- Online: the index of each partition larger than 16 MiB is built before
-- this transaction, CREATE INDEX CONCURRENTLY (writers go on;
-- prepareReceivedCover in migrate.go); this transaction builds those of
-- the smaller ones (milliseconds), creates the partitioned index ON ONLY
-- dlq_entries, attaches the partitions' indexes to it (no scan) and drops
-- the index it replaces (a short exclusive lock, no scan). A partition
-- created later gets its index from dlq_entries'.

CREATE INDEX dlq_entries_dlq_received_cover ON ONLY dlq_entries (dlq, received_at) INCLUDE (seq, status, fingerprint, part);

DO $$
DECLARE
    p name;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'dlq_entries'::regclass LOOP
        -- Built before this transaction for a large partition; here for
        -- a small one (a few milliseconds), or one left invalid.
        IF EXISTS (SELECT 1 FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid
                WHERE ic.relname = p || '_received_cover' AND ic.relnamespace = current_schema()::regnamespace AND NOT x.indisvalid) THEN
            EXECUTE format('DROP INDEX %I', p || '_received_cover');
        END IF;
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I (dlq, received_at) INCLUDE (seq, status, fingerprint, part)',
            p || '_received_cover', p);
        EXECUTE format('ALTER INDEX dlq_entries_dlq_received_cover ATTACH PARTITION %I', p || '_received_cover');
    END LOOP;
END $$;

DROP INDEX dlq_entries_dlq_received;
