-- Cost-based admission (docs/cost-admission.md): policy rules that bound what the planner
-- estimates a read costs the source (max_cost, max_plan_rows, max_plan_bytes), what an
-- over-limit read gets (on_exceed: refused, or queued for `approvals` approvers), rules that
-- ask more approvals of a write the planner estimates above a cost (approvals_above_cost),
-- and each identity's cost budget (planner cost units per second, with a burst).
ALTER TABLE policy_rules
    ADD COLUMN on_exceed text,
    ADD COLUMN approvals integer;

ALTER TABLE policy_rules
    DROP CONSTRAINT policy_rules_kind,
    ADD CONSTRAINT policy_rules_kind
        CHECK (kind IN ('deny', 'max_rows', 'approvals_required', 'require_approval', 'mask',
                        'max_cost', 'max_plan_rows', 'max_plan_bytes', 'approvals_above_cost')),
    ADD CONSTRAINT policy_rules_cost
        CHECK (kind NOT IN ('max_cost', 'max_plan_rows', 'max_plan_bytes', 'approvals_above_cost')
               OR value > 0),
    ADD CONSTRAINT policy_rules_on_exceed
        CHECK (on_exceed IS NULL
               OR (on_exceed IN ('refuse', 'queue')
                   AND kind IN ('max_cost', 'max_plan_rows', 'max_plan_bytes'))),
    ADD CONSTRAINT policy_rules_approvals_count
        CHECK (approvals IS NULL OR approvals BETWEEN 1 AND 5);

ALTER TABLE identities
    ADD COLUMN cost_per_second double precision CHECK (cost_per_second > 0),
    ADD COLUMN cost_burst      double precision CHECK (cost_burst >= 1);
