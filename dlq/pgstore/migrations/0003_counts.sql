-- redrive DLQ store, version 3: counts per DLQ × status × severity, kept
-- by statement-level triggers (one aggregate per statement over its
-- transition table) in the transaction of every insert, status change,
-- archive move and delete, so that Summaries, Count and the redrive_dlq_*
-- gauges read a few rows instead of counting entries. Archived entries
-- count under status 'archived'.
--
-- Online: this migration only creates the table and the triggers (a lock
-- that waits for the writes in flight and holds new ones back for as long
-- as these statements take). The entries that existed before, seq up to
-- dlq_counts_backfill.upto, are counted afterwards by pgstore's backfill
-- (Store.Backfill), in batches by seq, each in a short transaction that
-- advances dlq_counts_backfill.done: resumable after a stop, by any
-- instance. Until it is done, readers add the count of the entries in
-- (done, upto] (see Store.Count), so counts are right all along; the
-- triggers ignore those entries, the backfill counts them as they are
-- when their batch runs.

CREATE TABLE dlq_counts (
    dlq      text   NOT NULL,
    status   text   NOT NULL,
    severity text   NOT NULL,
    n        bigint NOT NULL,
    PRIMARY KEY (dlq, status, severity)
);

CREATE TABLE dlq_counts_backfill (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    upto bigint  NOT NULL,
    done bigint  NOT NULL DEFAULT 0
);

-- dlq_counts_apply adds the rows of new_rows and subtracts those of
-- old_rows (the transition tables a trigger has), under status TG_ARGV[0]
-- when given (the archive), except the rows the backfill has yet to count.
-- Rows are upserted in key order, so that concurrent writers lock them in
-- the same order and never deadlock.
CREATE FUNCTION dlq_counts_apply() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_upto bigint;
    v_done bigint;
BEGIN
    SELECT upto, done INTO v_upto, v_done FROM dlq_counts_backfill;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO dlq_counts AS c (dlq, status, severity, n)
        SELECT dlq, coalesce(TG_ARGV[0], status), severity, count(*) FROM new_rows
        WHERE seq > v_upto OR seq <= v_done
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO dlq_counts AS c (dlq, status, severity, n)
        SELECT dlq, coalesce(TG_ARGV[0], status), severity, -count(*) FROM old_rows
        WHERE seq > v_upto OR seq <= v_done
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO dlq_counts AS c (dlq, status, severity, n)
        SELECT dlq, st, severity, sum(d) FROM (
            SELECT dlq, coalesce(TG_ARGV[0], status) AS st, severity, 1 AS d FROM new_rows
            WHERE seq > v_upto OR seq <= v_done
            UNION ALL
            SELECT dlq, coalesce(TG_ARGV[0], status), severity, -1 FROM old_rows
            WHERE seq > v_upto OR seq <= v_done) x
        GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

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

-- Every entry that exists now: the triggers' locks wait for the writes in
-- flight, so none commits later with a smaller seq.
INSERT INTO dlq_counts_backfill (upto)
SELECT greatest((SELECT coalesce(max(seq), 0) FROM dlq_entries), (SELECT coalesce(max(seq), 0) FROM dlq_entries_archive));
