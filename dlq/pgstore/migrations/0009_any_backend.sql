-- redrive DLQ store, version 9: an entry's broker is any backend's name
-- (a driver.Descriptor's: "rabbitmq", "kafka", or a backend of the
-- application's own), no longer one of the two built-in ones: the check
-- broker IN ('rabbitmq', 'kafka') goes from the live entries and from
-- every partition that kept a copy of its own (a week's partition keeps
-- its inherited check as a local one once detached to the archive, and
-- the first partition, the table of version 1, had its own).
-- dlq.Record.PrepareInsert checks the name (1 to 32 characters of
-- [a-z0-9_-]) before every insert, on every store.

ALTER TABLE dlq_entries DROP CONSTRAINT IF EXISTS dlq_entries_broker_check;

DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT t.relname AS tab, k.conname AS con
            FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid
            WHERE k.contype = 'c' AND t.relnamespace = current_schema()::regnamespace
              AND t.relname LIKE 'dlq\_entries%' AND k.conname LIKE '%broker%'
              AND pg_get_constraintdef(k.oid) LIKE '%broker%' LOOP
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT IF EXISTS %I', c.tab, c.con);
    END LOOP;
END $$;
