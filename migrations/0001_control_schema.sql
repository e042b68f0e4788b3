-- InterLock control database, version 1.
-- Forward-only: never edit a migration that has shipped; add a new numbered file instead.
-- Applied by `interlock migrate` and at start-up under an advisory lock (src/control/migrate.rs).

-- Identities: agents call governed tools; approvers resolve queued writes; operators run the
-- gateway. Rate limits are per identity; NULL means "use the configured default".
CREATE TABLE identities (
    id              uuid PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    kind            text NOT NULL CHECK (kind IN ('agent', 'approver', 'operator')),
    rate_per_second double precision CHECK (rate_per_second IS NULL OR rate_per_second > 0),
    burst           integer CHECK (burst IS NULL OR burst > 0),
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as SHA-256 of the whole key (keys carry 256 bits of randomness, so a
-- slow hash adds nothing). The key itself is shown once, at creation; `prefix` is what
-- listings show and what an operator uses to revoke.
CREATE TABLE api_keys (
    id          uuid PRIMARY KEY,
    identity_id uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    prefix      text NOT NULL UNIQUE,
    key_hash    bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    label       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_keys_identity ON api_keys (identity_id);

-- Registered sources. Secrets are never stored: a password is named by reference
-- (an environment variable or a file the gateway reads at connect time).
CREATE TABLE sources (
    id                   text PRIMARY KEY CHECK (id ~ '^[a-z][a-z0-9_-]{0,62}$'),
    kind                 text NOT NULL CHECK (kind IN ('postgres', 'documents')),
    description          text NOT NULL DEFAULT '',
    enabled              boolean NOT NULL DEFAULT true,
    host                 text,
    port                 integer CHECK (port IS NULL OR port BETWEEN 1 AND 65535),
    dbname               text,
    read_user            text,
    read_password_env    text,
    read_password_file   text,
    write_user           text,
    write_password_env   text,
    write_password_file  text,
    tls_mode             text NOT NULL DEFAULT 'disable' CHECK (tls_mode IN ('disable', 'require', 'verify-full')),
    tls_ca_file          text,
    search_path          text[] NOT NULL DEFAULT ARRAY['public'],
    statement_timeout_ms integer NOT NULL DEFAULT 30000 CHECK (statement_timeout_ms > 0),
    max_rows             integer NOT NULL DEFAULT 1000 CHECK (max_rows > 0),
    max_bytes            bigint NOT NULL DEFAULT 4194304 CHECK (max_bytes > 0),
    pool_size            integer NOT NULL DEFAULT 8 CHECK (pool_size BETWEEN 1 AND 256),
    cache_ttl_ms         integer NOT NULL DEFAULT 0 CHECK (cache_ttl_ms >= 0),
    approval_ttl_secs    integer NOT NULL DEFAULT 86400 CHECK (approval_ttl_secs > 0),
    approvals_required   integer NOT NULL DEFAULT 1 CHECK (approvals_required BETWEEN 1 AND 5),
    -- key for the `hash` redaction strategy: random per source, so hashed values join within
    -- a source and cannot be correlated across sources.
    mask_key             bytea NOT NULL CHECK (length(mask_key) >= 32),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK (kind <> 'postgres' OR (host IS NOT NULL AND port IS NOT NULL AND dbname IS NOT NULL AND read_user IS NOT NULL)),
    CHECK (read_password_env IS NULL OR read_password_file IS NULL),
    CHECK (write_password_env IS NULL OR write_password_file IS NULL)
);

-- Source roles: named sets of allow/deny statements (action + resource pattern) per source.
CREATE TABLE source_roles (
    source_id   text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    name        text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_-]{0,62}$'),
    description text NOT NULL DEFAULT '',
    PRIMARY KEY (source_id, name)
);

CREATE TABLE role_statements (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id text NOT NULL,
    role_name text NOT NULL,
    effect    text NOT NULL CHECK (effect IN ('allow', 'deny')),
    action    text NOT NULL CHECK (action IN ('read', 'write', 'describe', 'discover')),
    resource  text NOT NULL CHECK (length(resource) BETWEEN 1 AND 400),
    FOREIGN KEY (source_id, role_name) REFERENCES source_roles (source_id, name) ON DELETE CASCADE,
    UNIQUE (source_id, role_name, effect, action, resource)
);

CREATE TABLE role_grants (
    identity_id uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    source_id   text NOT NULL,
    role_name   text NOT NULL,
    granted_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (source_id, role_name) REFERENCES source_roles (source_id, name) ON DELETE CASCADE,
    PRIMARY KEY (identity_id, source_id, role_name)
);

-- Approvers are scoped to the sources whose writes they may approve.
CREATE TABLE approver_scopes (
    identity_id uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
    source_id   text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    PRIMARY KEY (identity_id, source_id)
);

-- Policies narrow what roles allow; they can never grant. One row per rule.
CREATE TABLE policy_rules (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id   text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    policy_name text NOT NULL CHECK (policy_name ~ '^[a-z][a-z0-9_-]{0,62}$'),
    kind        text NOT NULL CHECK (kind IN ('deny', 'max_rows', 'approvals_required')),
    action      text CHECK (action IN ('read', 'write', 'describe', 'discover')),
    resource    text,
    value       bigint,
    CHECK (kind <> 'deny' OR (action IS NOT NULL AND resource IS NOT NULL)),
    CHECK (kind <> 'max_rows' OR value > 0),
    CHECK (kind <> 'approvals_required' OR (resource IS NOT NULL AND value BETWEEN 1 AND 5))
);
CREATE INDEX policy_rules_source ON policy_rules (source_id);

CREATE TABLE redaction_rules (
    source_id    text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    schema_name  text NOT NULL,
    table_name   text NOT NULL,
    column_name  text NOT NULL,
    strategy     text NOT NULL CHECK (strategy IN ('redact', 'partial', 'hash', 'null')),
    keep_last    integer NOT NULL DEFAULT 4 CHECK (keep_last >= 0),
    allow_filter boolean NOT NULL DEFAULT false,
    PRIMARY KEY (source_id, schema_name, table_name, column_name)
);

-- Approvals: writes held for human approvers (state machine in interlock-actors).
CREATE TABLE approvals (
    id                 uuid PRIMARY KEY,
    source_id          text NOT NULL REFERENCES sources (id),
    requester_id       uuid NOT NULL REFERENCES identities (id),
    statement          text NOT NULL,
    fingerprint        text NOT NULL,
    touches            jsonb NOT NULL,
    state              text NOT NULL CHECK (state IN ('pending', 'approved', 'executing', 'executed',
                                                      'failed', 'rejected', 'expired', 'outcome_unknown')),
    approvals_required integer NOT NULL CHECK (approvals_required BETWEEN 1 AND 5),
    created_at         timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz NOT NULL,
    executed_at        timestamptz,
    rows_affected      bigint,
    result             jsonb,
    error              text
);
CREATE INDEX approvals_state ON approvals (state, source_id, created_at);
CREATE INDEX approvals_requester ON approvals (requester_id, created_at);

CREATE TABLE approval_decisions (
    approval_id uuid NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    approver_id uuid NOT NULL REFERENCES identities (id),
    decision    text NOT NULL CHECK (decision IN ('approve', 'reject')),
    reason      text NOT NULL DEFAULT '',
    decided_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (approval_id, approver_id)
);

-- Audit: one canonical record per governed call and per administrative action, hash-chained:
-- hash = SHA-256(prev_hash || canonical JSON of the record). `seq` is assigned by the single
-- writer that holds the chain lock, so the chain has no gaps.
CREATE TABLE audit_records (
    seq         bigint PRIMARY KEY,
    at          timestamptz NOT NULL,
    request_id  text NOT NULL,
    identity_id uuid,
    identity    text,
    adapter     text NOT NULL,
    dialect     text,
    tool        text NOT NULL,
    source_id   text,
    action      text,
    statement   text,
    fingerprint text,
    decision    jsonb NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('ok', 'refused', 'queued', 'error', 'cancelled')),
    row_count   bigint,
    duration_us bigint NOT NULL,
    cache_hit   boolean NOT NULL DEFAULT false,
    approval_id uuid,
    prev_hash   bytea NOT NULL,
    hash        bytea NOT NULL UNIQUE
);
CREATE INDEX audit_identity ON audit_records (identity, seq DESC);
CREATE INDEX audit_source ON audit_records (source_id, seq DESC);
CREATE INDEX audit_approval ON audit_records (approval_id) WHERE approval_id IS NOT NULL;

-- Catalog of each SQL source, replaced as a whole by each scan.
CREATE TABLE catalog_scans (
    source_id      text PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
    scanned_at     timestamptz NOT NULL,
    truncated      boolean NOT NULL,
    relation_count integer NOT NULL
);

CREATE TABLE catalog_relations (
    source_id   text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    schema_name text NOT NULL,
    name        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('table', 'partitioned_table', 'view', 'materialized_view',
                                              'foreign_table', 'sequence')),
    comment     text,
    primary_key text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (source_id, schema_name, name)
);

CREATE TABLE catalog_columns (
    source_id   text NOT NULL,
    schema_name text NOT NULL,
    table_name  text NOT NULL,
    position    integer NOT NULL,
    name        text NOT NULL,
    data_type   text NOT NULL,
    comment     text,
    FOREIGN KEY (source_id, schema_name, table_name)
        REFERENCES catalog_relations (source_id, schema_name, name) ON DELETE CASCADE,
    PRIMARY KEY (source_id, schema_name, table_name, position)
);

-- Discovery assets: documents of document sources and one asset per catalogued table.
CREATE TABLE discovery_assets (
    source_id     text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    id            text NOT NULL CHECK (length(id) BETWEEN 1 AND 200),
    source_type   text NOT NULL,
    document_type text NOT NULL,
    title         text NOT NULL,
    body          text NOT NULL DEFAULT '',
    category_path text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    audiences     text[] NOT NULL DEFAULT '{}',
    entities      text[] NOT NULL DEFAULT '{}',
    search        tsvector GENERATED ALWAYS AS (
                      setweight(to_tsvector('english', coalesce(title, '')), 'A') ||
                      setweight(to_tsvector('english', coalesce(body, '')), 'B')) STORED,
    PRIMARY KEY (source_id, id)
);
CREATE INDEX discovery_assets_search ON discovery_assets USING gin (search);
CREATE INDEX discovery_assets_category ON discovery_assets (source_id, category_path text_pattern_ops);

CREATE TABLE asset_relations (
    source_id     text NOT NULL,
    from_asset    text NOT NULL,
    -- relations may point into another source; they are stored as ingested and never
    -- followed across sources (discovery filters on to_source_id = source_id).
    to_source_id  text NOT NULL,
    to_asset      text NOT NULL,
    relation_type text NOT NULL,
    FOREIGN KEY (source_id, from_asset) REFERENCES discovery_assets (source_id, id) ON DELETE CASCADE,
    PRIMARY KEY (source_id, from_asset, to_source_id, to_asset, relation_type)
);
