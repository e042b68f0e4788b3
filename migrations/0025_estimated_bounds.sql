-- Where an approval's bound came from (issue 54): the planner's estimate (an `explain`
-- preview), a rolled-back run's count (`dry_run`), an approver, or the count of an approved
-- run that exceeded an estimated bound (`measured`). An estimate is a statistic, not a
-- bound anybody chose: a run that exceeds it is rolled back and the approval handed back to
-- its approvers with the exact count, instead of failing.
--
-- Expand only (compatible_from = 23): the previous release never reads these columns.
ALTER TABLE approvals ADD COLUMN bound_source text
    CHECK (bound_source IN ('estimate', 'dry_run', 'approver', 'measured'));
-- Each hand-back: when, the estimate, the count, and the decisions it had then.
ALTER TABLE approvals ADD COLUMN handbacks jsonb NOT NULL DEFAULT '[]';
