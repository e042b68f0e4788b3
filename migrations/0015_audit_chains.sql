-- A fleet without one audit lock (issue 27): every audit writer incarnation appends to a hash
-- chain of its own, so replicas never wait for each other's batches or re-read a shared head.
--
-- * `seq` stays the log's one gap-free order, the order of the Merkle tree's leaves, but the
--   database now hands it out as a batch goes in (audit_records_seq). Writers' batches
--   interleave; within a chain, seq grows with the place in the chain.
-- * `chain` and `chain_seq` say which chain a record is in and where. NULL for the records
--   written before: they are the founding chain (the nil UUID), where the place is the seq.
--   A chain's first record chains to SHA-256("interlock-audit-chain/1" NUL uuid-bytes).
-- * A batch that did not commit leaves its seqs unused. Whoever extends the tree fills a
--   seq that stayed empty for a while with a `void` record (in no chain, hashed over its
--   seq and contents); the primary key on seq decides between a void and a batch that was
--   merely slow, which then takes new seqs. audit_holes remembers when a hole was first seen.
-- * audit_chains names each chain's writer; audit_partitions.chain_heads keeps, for an
--   archived partition, every chain's last record up to its end, which the first live
--   records of each chain must go on from.
CREATE TABLE IF NOT EXISTS audit_chains (
    chain uuid PRIMARY KEY,
    writer text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE audit_records ADD COLUMN IF NOT EXISTS chain uuid;
ALTER TABLE audit_records ADD COLUMN IF NOT EXISTS chain_seq bigint;
ALTER TABLE audit_records ADD COLUMN IF NOT EXISTS void boolean NOT NULL DEFAULT false;

CREATE SEQUENCE IF NOT EXISTS audit_records_seq AS bigint MINVALUE 1;
DO $$
DECLARE
    top bigint;
BEGIN
    SELECT greatest(
        coalesce((SELECT max(seq) FROM audit_records), 0),
        coalesce((SELECT max(upper) - 1 FROM audit_partitions WHERE archived_at IS NOT NULL), 0)
    ) INTO top;
    IF top > 0 THEN
        PERFORM setval('audit_records_seq', top, true);
    END IF;
END
$$;
ALTER TABLE audit_records ALTER COLUMN seq SET DEFAULT nextval('audit_records_seq');

CREATE TABLE IF NOT EXISTS audit_holes (
    seq bigint PRIMARY KEY,
    seen_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE audit_partitions ADD COLUMN IF NOT EXISTS chain_heads jsonb;
