-- The inbox: one row per message a worker handled (its transaction
-- committed), partitioned by the day it was handled (days since the Unix
-- epoch, UTC), so that retention drops whole days. Partition 0 holds the
-- rows of a day whose partition did not exist yet (the application
-- computes day and writes 0 then); retention deletes its old rows one by
-- one. The primary key (worker, key, day) is unique per partition; the
-- inbox looks a message up in every partition (up to tomorrow's) under a
-- transaction-level advisory lock on (worker, key), taken by the
-- statement before, so that it is unique across them.
CREATE TABLE redrive_inbox (
    worker      text        NOT NULL,
    key         text        NOT NULL,
    day         integer     NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT redrive_inbox_pkey PRIMARY KEY (worker, key, day)
) PARTITION BY LIST (day);

CREATE TABLE redrive_inbox_d0 PARTITION OF redrive_inbox FOR VALUES IN (0);

-- The outbox: messages written in the application's transactions and not
-- yet confirmed by the broker; the relay deletes a row once the broker
-- confirmed its message. seq is the order the relay publishes in; a
-- transaction-level advisory lock per (topic, key) taken before the insert
-- makes seq follow the commit order of the transactions that write one
-- key. shard (0-63) is a hash of (topic, key): each shard is published by
-- one relay at a time.
CREATE TABLE redrive_outbox (
    seq        bigint      GENERATED ALWAYS AS IDENTITY,
    shard      smallint    NOT NULL,
    topic      text        NOT NULL,
    key        bytea,
    id         text        NOT NULL,
    value      bytea       NOT NULL,
    headers    bytea,
    ts         timestamptz NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT redrive_outbox_pkey PRIMARY KEY (seq)
);

CREATE INDEX redrive_outbox_shard_seq ON redrive_outbox (shard, seq);

-- Messages the broker refuses for good (broker.ErrTooLarge: over its size
-- limit), moved here by the relay with the broker's error, so that they do
-- not hold their topic forever; nothing is dropped. An operator who
-- raised the limit moves them back into redrive_outbox.
CREATE TABLE redrive_outbox_parked (
    seq        bigint      NOT NULL,
    shard      smallint    NOT NULL,
    topic      text        NOT NULL,
    key        bytea,
    id         text        NOT NULL,
    value      bytea       NOT NULL,
    headers    bytea,
    ts         timestamptz NOT NULL,
    written_at timestamptz NOT NULL,
    error      text        NOT NULL,
    parked_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT redrive_outbox_parked_pkey PRIMARY KEY (seq)
);
