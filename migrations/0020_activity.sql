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
