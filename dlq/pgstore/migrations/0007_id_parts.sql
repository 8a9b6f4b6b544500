-- redrive DLQ store, version 7: entries whose id carries no time
-- (Kafka's "{partition}-{offset}", any id not made by dlq.NewID) are
-- partitioned by the week they were received in.
--
-- Such an id does not tell its week, so the store records it: a row of
-- dlq_id_parts per entry of such an id inserted from this version on (in
-- a week partition or in partition 0), written by the statement of the
-- insert before the entry (an id taken is not inserted: the primary key
-- keeps (dlq, id) unique per DLQ across partitions). A lookup by (dlq,
-- id) of such an id reads partition 0 and the recorded part. When
-- ArchivePeriods keeps an entry live (moves it to partition 0) its row
-- says 0; when its week goes to the archive the row stays as it is (the
-- archive's partition has the same part). Rows are never deleted: the
-- store deletes no entry (archiving moves them).
--
-- Online: it only creates the table. The entries of such ids stored
-- before this version are in partition 0, which every lookup reads, and
-- unique there by its (dlq, id) index: nothing is backfilled.

CREATE TABLE dlq_id_parts (
    dlq  text    NOT NULL,
    id   text    NOT NULL,
    part integer NOT NULL,
    PRIMARY KEY (dlq, id)
);
