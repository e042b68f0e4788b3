-- The caller's identity carried into PostgreSQL (see src/sources/postgres/flight.rs): with
-- 'settings', every governed transaction on the source first sets `interlock.identity` and
-- `interlock.roles` (transaction-local), so the source's own row-level security can use them.
ALTER TABLE sources
    ADD COLUMN identity_propagation text NOT NULL DEFAULT 'none'
        CHECK (identity_propagation IN ('none', 'settings'));
