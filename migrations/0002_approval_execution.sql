-- Which gateway instance is executing an approval, so recovery can tell a live executor
-- (it holds the session advisory lock `executing_by`) from a dead one.
ALTER TABLE approvals
    ADD COLUMN executing_by integer,
    ADD COLUMN executing_at timestamptz;
CREATE INDEX approvals_executing ON approvals (executing_by) WHERE state = 'executing';
