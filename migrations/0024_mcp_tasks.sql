-- MCP Tasks (issue 53): a `tools/call` an agent asked to run as a task.
--
-- A held call's task *is* its approval: the task has the approval's id and its status is
-- read off the approval's state. A call answered at once under 2025-11-25 (a read, a
-- refusal) keeps that answer here, for `tasks/result` on any replica. Tasks are the
-- requester's only: every lookup is scoped by `requester_id`.
--
-- Expand only (compatible_from = 23): the previous release never writes `withdrawn` and
-- never reads `mcp_tasks`; its statements run unchanged.
ALTER TABLE approvals DROP CONSTRAINT IF EXISTS approvals_state_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_state_check
    CHECK (state IN ('pending', 'approved', 'executing', 'executed', 'failed', 'rejected',
                     'expired', 'outcome_unknown', 'withdrawn')) NOT VALID;
ALTER TABLE approvals VALIDATE CONSTRAINT approvals_state_check;
-- When the requester withdrew a pending approval (its task cancelled).
ALTER TABLE approvals ADD COLUMN withdrawn_at timestamptz;

CREATE TABLE mcp_tasks (
    id           uuid PRIMARY KEY,
    requester_id uuid NOT NULL REFERENCES identities (id),
    -- The approval the task waits on (same id), or NULL for a call answered at once.
    approval_id  uuid UNIQUE REFERENCES approvals (id) ON DELETE CASCADE,
    tool         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- How long the task is kept, from creation (what the task reports as its ttl), and
    -- when that ends: after it the task is no longer found.
    ttl_ms       bigint NOT NULL CHECK (ttl_ms > 0),
    expires_at   timestamptz NOT NULL,
    -- The answer of a call that did not wait for an approval: the CallToolResult it got.
    answer       jsonb,
    CHECK ((approval_id IS NULL) <> (answer IS NULL)),
    CHECK (approval_id IS NULL OR approval_id = id)
);
CREATE INDEX mcp_tasks_requester ON mcp_tasks (requester_id, created_at DESC, id DESC);
-- The sweep forgets kept answers whose task has expired.
CREATE INDEX mcp_tasks_answered_expiry ON mcp_tasks (expires_at) WHERE approval_id IS NULL;
