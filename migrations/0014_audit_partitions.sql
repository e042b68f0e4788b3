-- Retention by archiving (issue 27). audit_records becomes a table partitioned by ranges of
-- seq: the partition key must be seq, because the primary key on seq is what refuses a batch
-- whose seqs another writer took (migration 0012), and PostgreSQL requires the partition key
-- in every unique index. Seq order is time order, so a closed partition is a closed stretch
-- of time; `interlock audit archive` writes one to a file with the signed checkpoint that
-- covers it, verifies the file, and only then detaches and drops it.
--
-- audit_partitions is the log's own list of its partitions (bounds, and for an archived one
-- the file, its SHA-256 and the hash of its last record, which the first live record must
-- chain to). Partitions are created ahead of the head by audit_extend_partitions, called by
-- the gateway's maintenance and, should the head ever reach the end of the last partition,
-- by the audit writer itself.
CREATE TABLE IF NOT EXISTS audit_partitions (
    lower bigint PRIMARY KEY CHECK (lower >= 1),
    upper bigint NOT NULL CHECK (upper > lower),
    name text NOT NULL UNIQUE,
    archived_at timestamptz,
    archive_file text,
    archive_sha256 text,
    archive_records bigint,
    last_hash bytea CHECK (last_hash IS NULL OR length(last_hash) = 32)
);

DO $$
DECLARE
    head bigint;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'audit_records'::regclass) = 'p' THEN
        RETURN;
    END IF;
    LOCK TABLE audit_records IN ACCESS EXCLUSIVE MODE;
    SELECT coalesce(max(seq), 0) INTO head FROM audit_records;
    ALTER TABLE audit_records RENAME TO audit_records_1;
    ALTER INDEX audit_records_pkey RENAME TO audit_records_1_pkey;
    ALTER INDEX audit_identity RENAME TO audit_records_1_identity_seq_idx;
    ALTER INDEX audit_source RENAME TO audit_records_1_source_id_seq_idx;
    ALTER INDEX audit_approval RENAME TO audit_records_1_approval_id_idx;
    CREATE TABLE audit_records (LIKE audit_records_1 INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
        PARTITION BY RANGE (seq);
    ALTER TABLE audit_records ADD CONSTRAINT audit_records_pkey PRIMARY KEY (seq);
    CREATE INDEX audit_identity ON audit_records (identity, seq DESC);
    CREATE INDEX audit_source ON audit_records (source_id, seq DESC);
    CREATE INDEX audit_approval ON audit_records (approval_id) WHERE approval_id IS NOT NULL;
    IF head > 0 THEN
        -- The records so far become the first partition, closed right after the head.
        EXECUTE format('ALTER TABLE audit_records ATTACH PARTITION audit_records_1 FOR VALUES FROM (1) TO (%s)', head + 1);
        INSERT INTO audit_partitions (lower, upper, name) VALUES (1, head + 1, 'audit_records_1');
    ELSE
        DROP TABLE audit_records_1;
    END IF;
END
$$;

-- Creates partitions of `span` seqs each after the last one (or from the head + 1 when there
-- is none) until one holds seq `upto`; returns how many it created. Each is created as a
-- table of its own with a CHECK matching its bounds and then attached, which takes only a
-- SHARE UPDATE EXCLUSIVE lock on audit_records: appends and reads go on meanwhile.
CREATE OR REPLACE FUNCTION audit_extend_partitions(upto bigint, span bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    top bigint;
    made integer := 0;
    part text;
BEGIN
    IF span IS NULL OR span < 1 THEN
        RAISE EXCEPTION 'audit partitions must hold at least one record (span %)', span
            USING ERRCODE = '22023';
    END IF;
    -- "ILPARTNS": one creator at a time, across the fleet.
    PERFORM pg_advisory_xact_lock(5281684704483102291);
    SELECT max(upper) INTO top FROM audit_partitions;
    IF top IS NULL THEN
        SELECT coalesce(max(seq), 0) + 1 INTO top FROM audit_records;
    END IF;
    IF (upto - top) / span > 1000 THEN
        RAISE EXCEPTION 'seq % is more than 1000 partitions of % ahead of the last partition', upto, span
            USING ERRCODE = '22023';
    END IF;
    WHILE top <= upto LOOP
        part := 'audit_records_' || top;
        EXECUTE format('CREATE TABLE %I (LIKE audit_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (seq >= %s AND seq < %s)',
                       part, part || '_bounds', top, top + span);
        EXECUTE format('ALTER TABLE audit_records ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                       part, top, top + span);
        INSERT INTO audit_partitions (lower, upper, name) VALUES (top, top + span, part);
        top := top + span;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
