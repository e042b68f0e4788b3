-- The SHA-256 (hex) of an audited statement's original bytes, set only when the statement
-- had to be stored escaped (it held NUL, which PostgreSQL text cannot store).
ALTER TABLE audit_records ADD COLUMN statement_sha256 text;
