-- redrive DLQ store, version 3: counts per DLQ × status × severity, kept
-- by statement-level triggers (one aggregate per statement over its
-- transition table) in the transaction of every insert, status change,
-- archive move and delete, so that Summaries, Count and the redrive_dlq_*
-- gauges read a few rows instead of counting entries. Archived entries
-- count under status 'archived'.
--
-- The backfill counts the existing entries once, under a lock that holds
-- writers (not readers) back for as long as that count takes: about a
-- second per million entries.

CREATE TABLE dlq_counts (
    dlq      text   NOT NULL,
    status   text   NOT NULL,
    severity text   NOT NULL,
    n        bigint NOT NULL,
    PRIMARY KEY (dlq, status, severity)
);

-- dlq_counts_apply adds the rows of new_rows and subtracts those of
-- old_rows (the transition tables a trigger has), under status TG_ARGV[0]
-- when given (the archive). Rows are upserted in key order, so that
-- concurrent writers lock them in the same order and never deadlock.
CREATE FUNCTION dlq_counts_apply() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO dlq_counts AS c (dlq, status, severity, n)
        SELECT dlq, coalesce(TG_ARGV[0], status), severity, count(*) FROM new_rows
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO dlq_counts AS c (dlq, status, severity, n)
        SELECT dlq, coalesce(TG_ARGV[0], status), severity, -count(*) FROM old_rows
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO dlq_counts AS c (dlq, status, severity, n)
        SELECT dlq, st, severity, sum(d) FROM (
            SELECT dlq, coalesce(TG_ARGV[0], status) AS st, severity, 1 AS d FROM new_rows
            UNION ALL
            SELECT dlq, coalesce(TG_ARGV[0], status), severity, -1 FROM old_rows) x
        GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

LOCK TABLE dlq_entries, dlq_entries_archive IN SHARE ROW EXCLUSIVE MODE;

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

INSERT INTO dlq_counts (dlq, status, severity, n)
SELECT dlq, status, severity, count(*) FROM dlq_entries GROUP BY 1, 2, 3;
INSERT INTO dlq_counts AS c (dlq, status, severity, n)
SELECT dlq, 'archived', severity, count(*) FROM dlq_entries_archive GROUP BY 1, 3
ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n;
