-- Activity over time (issue 31): each replica's per-minute counts of the calls it served, per
-- source ('' for calls that named none), upserted while the minute fills; the console's
-- charts read them back merged across replicas. Kept for activity.retain_hours.
CREATE TABLE activity_minutes (
    minute    timestamptz NOT NULL,
    source_id text NOT NULL,
    replica   uuid NOT NULL,
    data      jsonb NOT NULL,
    PRIMARY KEY (minute, source_id, replica)
);

-- Every circuit transition each replica's breaker made, with its cause (the failure rate,
-- the operator who forced it and why, the probe that closed or reopened it).
CREATE TABLE circuit_transitions (
    id         bigserial PRIMARY KEY,
    source_id  text NOT NULL,
    replica    uuid NOT NULL,
    at         timestamptz NOT NULL,
    from_state text NOT NULL,
    to_state   text NOT NULL,
    reason     text NOT NULL
);
CREATE INDEX circuit_transitions_at ON circuit_transitions (at, source_id);
