-- What the replicas sharing this control database agree on (see src/fleet/). Notifications on
-- the `interlock_fleet` channel are the fast path; these tables are what every replica
-- reconciles from, so a missed notification heals within one reconcile interval.

-- Fleet-wide cache generations: an approved write bumps the generation of every table it
-- wrote; a replica that has applied an older generation drops its cached results of that
-- table.
CREATE TABLE fleet_cache_generations (
    source_id   text NOT NULL,
    schema_name text NOT NULL,
    table_name  text NOT NULL,
    generation  bigint NOT NULL DEFAULT 1,
    changed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, schema_name, table_name)
);

-- Circuits an operator forced open, fleet-wide: every replica refuses calls to the source
-- until the row is gone (force close, reset, or `until` passed). Automatic breakers stay
-- per replica.
CREATE TABLE circuit_overrides (
    source_id  text PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
    reason     text NOT NULL,
    forced_by  text NOT NULL,
    forced_at  timestamptz NOT NULL DEFAULT now(),
    until      timestamptz
);

-- The live replicas: each registers at start and heartbeats; its liveness is its instance
-- lock (see approvals::instance), the heartbeat says when it last reported its circuits.
CREATE TABLE replicas (
    id           uuid PRIMARY KEY,
    instance_id  integer NOT NULL,
    address      text NOT NULL,
    version      text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    circuits     jsonb NOT NULL DEFAULT '{}'
);
