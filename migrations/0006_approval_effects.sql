-- Approvers approve the effect, not a string (see src/approvals/preview.rs):
-- how each source previews a queued write, the preview stored with the approval, and the
-- bound on the rows the write may affect when it runs.
ALTER TABLE sources
    ADD COLUMN approval_preview text NOT NULL DEFAULT 'explain'
        CHECK (approval_preview IN ('dry_run', 'explain', 'off'));

ALTER TABLE approvals
    ADD COLUMN preview  jsonb,
    ADD COLUMN max_rows bigint CHECK (max_rows IS NULL OR max_rows >= 0);
