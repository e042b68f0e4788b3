-- An approved write is held to the rows it actually changes (src/sources/postgres/changes.rs):
-- the rows it changed, per table, as PostgreSQL counted them inside its transaction; and,
-- where the preview imaged rows by key, the digest of those keys, which the execution must
-- change exactly (src/approvals/images.rs).
ALTER TABLE approvals
    ADD COLUMN rows_changed jsonb,
    ADD COLUMN preview_keys text;
