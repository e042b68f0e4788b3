-- Each delivery's attempts, newest last (at most 20 kept): when, the endpoint's HTTP status
-- (null when no answer came: refused target, connection error, timeout), the error, and how
-- long the attempt took. The console shows them with the next retry.
ALTER TABLE webhook_deliveries
    ADD COLUMN attempt_log jsonb NOT NULL DEFAULT '[]';
