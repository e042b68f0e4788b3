-- Signed checkpoints of the audit log (issue 27). The log's records are the leaves of a
-- Merkle tree (RFC 6962 hashing, as c2sp.org/tlog-checkpoint logs use it): leaf n is the
-- chain hash of the record with seq n + 1. audit_tree_hashes keeps the tree's stored hashes
-- in the layout of Go's sumdb/tlog (about two per record, appended when a checkpoint is
-- made, never on a governed call's path), so that a root and any inclusion or consistency
-- proof can be computed from O(log n) stored hashes. audit_tree says how many records the
-- stored hashes cover. audit_checkpoints keeps each signed checkpoint as its note text and,
-- where a timestamp authority is configured, its RFC 3161 response (DER) over the note.
CREATE TABLE IF NOT EXISTS audit_tree (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    size bigint NOT NULL CHECK (size >= 0)
);
INSERT INTO audit_tree (singleton, size) VALUES (true, 0) ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS audit_tree_hashes (
    idx bigint PRIMARY KEY,
    hash bytea NOT NULL CHECK (length(hash) = 32)
);

CREATE TABLE IF NOT EXISTS audit_checkpoints (
    tree_size bigint PRIMARY KEY CHECK (tree_size > 0),
    root_hash bytea NOT NULL CHECK (length(root_hash) = 32),
    key_name text NOT NULL,
    note text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    timestamp bytea,
    timestamped_at timestamptz,
    -- The last failure to get a timestamp (retried until one is kept).
    timestamp_error text
);
CREATE INDEX IF NOT EXISTS audit_checkpoints_unanchored
    ON audit_checkpoints (tree_size) WHERE timestamp IS NULL;
