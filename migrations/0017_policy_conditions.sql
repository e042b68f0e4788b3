-- Policy rules with conditions (src/governance/condition), report-only mode, operator
-- messages, and the kinds that need them: deny (of a resource, or of the whole call when
-- only a condition is given), max_rows, approvals_required, require_approval and mask.
-- The facts of the call that queued a write, so its re-check when previewed and run
-- evaluates the same conditions over the same call (src/approvals/recheck.rs).
ALTER TABLE approvals ADD COLUMN call_facts jsonb;

ALTER TABLE policy_rules
    ADD COLUMN rule_name    text,
    ADD COLUMN condition    text,
    ADD COLUMN mode         text NOT NULL DEFAULT 'enforce',
    ADD COLUMN message      text,
    ADD COLUMN strategy     text,
    ADD COLUMN keep_last    integer,
    ADD COLUMN allow_filter boolean NOT NULL DEFAULT false;

DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT conname FROM pg_constraint
              WHERE conrelid = 'policy_rules'::regclass AND contype = 'c'
    LOOP
        EXECUTE format('ALTER TABLE policy_rules DROP CONSTRAINT %I', c.conname);
    END LOOP;
END $$;

UPDATE policy_rules p SET rule_name = n.rn::text
  FROM (SELECT id, row_number() OVER (PARTITION BY source_id, policy_name ORDER BY id) AS rn
          FROM policy_rules) n
 WHERE n.id = p.id;

ALTER TABLE policy_rules
    ALTER COLUMN rule_name SET NOT NULL,
    ADD CONSTRAINT policy_rules_name CHECK (rule_name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    ADD CONSTRAINT policy_rules_unique_name UNIQUE (source_id, policy_name, rule_name),
    ADD CONSTRAINT policy_rules_policy_name CHECK (policy_name ~ '^[a-z][a-z0-9_-]{0,62}$'),
    ADD CONSTRAINT policy_rules_kind
        CHECK (kind IN ('deny', 'max_rows', 'approvals_required', 'require_approval', 'mask')),
    ADD CONSTRAINT policy_rules_action CHECK (action IN ('read', 'write', 'describe', 'discover')),
    ADD CONSTRAINT policy_rules_mode CHECK (mode IN ('enforce', 'report')),
    ADD CONSTRAINT policy_rules_deny
        CHECK (kind <> 'deny' OR ((action IS NULL) = (resource IS NULL)
                                  AND (resource IS NOT NULL OR condition IS NOT NULL))),
    ADD CONSTRAINT policy_rules_max_rows CHECK (kind <> 'max_rows' OR value > 0),
    ADD CONSTRAINT policy_rules_approvals
        CHECK (kind <> 'approvals_required' OR (resource IS NOT NULL AND value BETWEEN 1 AND 5)),
    ADD CONSTRAINT policy_rules_require_approval
        CHECK (kind <> 'require_approval' OR value BETWEEN 1 AND 5),
    ADD CONSTRAINT policy_rules_mask
        CHECK (kind <> 'mask' OR (resource IS NOT NULL
                                  AND strategy IN ('redact', 'partial', 'hash', 'null')));
