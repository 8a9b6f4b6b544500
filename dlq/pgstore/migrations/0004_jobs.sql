-- redrive DLQ store, version 4: replay-all and discard-all jobs, shared by
-- the replicas of `redrive serve` (dlq.JobStore). One row per job: its
-- kind, its filter, rate, actor and (discard-all) reason,
-- its state and counts, the cursor it resumes from (after the last
-- page it checkpointed), the replica owning it and until when (the lease),
-- and who asked for its cancellation. At most one running job per DLQ.

CREATE TABLE dlq_jobs (
    id             text        PRIMARY KEY,
    kind           text        NOT NULL,
    reason         text        NOT NULL DEFAULT '',
    dlq            text        NOT NULL,
    actor          text        NOT NULL,
    filter         jsonb       NOT NULL,
    until_at       timestamptz NOT NULL,
    rate           double precision NOT NULL,
    state          text        NOT NULL,
    error          text        NOT NULL DEFAULT '',
    started_at     timestamptz NOT NULL,
    finished_at    timestamptz,
    total          bigint      NOT NULL DEFAULT 0,
    replayed       bigint      NOT NULL DEFAULT 0,
    skipped        bigint      NOT NULL DEFAULT 0,
    failed         bigint      NOT NULL DEFAULT 0,
    mismatched     bigint      NOT NULL DEFAULT 0,
    duplicates     bigint      NOT NULL DEFAULT 0,
    discarded      bigint      NOT NULL DEFAULT 0,
    resume_after   text        NOT NULL DEFAULT '',
    owner          text        NOT NULL,
    lease_expires  timestamptz,
    takeovers      integer     NOT NULL DEFAULT 0,
    cancelled_by   text        NOT NULL DEFAULT '',
    cancelled_at   timestamptz
);

CREATE UNIQUE INDEX dlq_jobs_running ON dlq_jobs (dlq) WHERE state = 'running';
CREATE INDEX dlq_jobs_lease ON dlq_jobs (lease_expires) WHERE state = 'running';
