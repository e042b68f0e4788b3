-- Report-only rules over time, counted as their records are written (issue 54).
--
-- `GET /admin/policy/reported` used to read every audit record of its window (there is no
-- index on `at`: the log is partitioned by seq) and unpack each one's policy outcomes: fine
-- for the console's hour on a small log, a full scan of the log for a month on a large one.
-- Now the database counts each record's report-only outcomes into its minute in the
-- transaction that stores the record: exact (a rolled-back insert counts nothing; every
-- writer, of any release, is counted), with nothing to flush or lose. A window reads a few
-- rows per rule per hour, and per minute at its ragged ends.
--
-- Each chain (one per writer) keeps its own rows, so concurrent writers never wait for one
-- another's row lock on a shared counter.
--
-- Expand only (compatible_from = 23): the previous release never reads these; its inserts
-- into audit_records are counted like this release's.
CREATE TABLE policy_report_minutes (
    minute       timestamptz NOT NULL,
    source_id    text NOT NULL,
    policy       text NOT NULL,
    rule         text NOT NULL,
    chain        uuid NOT NULL,
    -- Matched, and enforcing the rule would have changed the call's effect.
    would_change bigint NOT NULL DEFAULT 0,
    -- Matched, and enforcing it would have changed nothing.
    no_change    bigint NOT NULL DEFAULT 0,
    -- Its condition could not be evaluated.
    errors       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, source_id, policy, rule, chain)
);

-- The same counts per hour, so that a window of weeks reads hours (a 30-day window: 720 per
-- rule and chain) and only its ragged ends read minutes.
CREATE TABLE policy_report_hours (LIKE policy_report_minutes INCLUDING ALL);
ALTER TABLE policy_report_hours RENAME COLUMN minute TO hour;

-- Records stored before this migration are not in the minutes: a window reaching back
-- before `counted_from` (a whole minute, after this transaction began) is answered for that
-- part from the audit records themselves.
CREATE TABLE policy_report_counting (
    only_row     boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    counted_from timestamptz NOT NULL
);
INSERT INTO policy_report_counting (counted_from)
    VALUES (date_bin(interval '1 minute', now(), TIMESTAMPTZ '1970-01-01 00:00:00+00') + interval '1 minute');

-- One record's report-only outcomes, added into its minute and its hour (UTC's, whatever
-- the writer's session time zone: date_bin, not date_trunc). The outcome is
-- the one `RuleOutcome::label` gives: `error`, else `no_change` when enforcing would change
-- nothing, else `would_change`; a rule whose condition did not hold is not counted.
CREATE FUNCTION policy_report_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH counted AS (
        SELECT coalesce(p ->> 'policy', '') AS policy, coalesce(p ->> 'rule', '') AS rule,
               count(*) FILTER (WHERE p ->> 'result' = 'matched'
                                  AND p -> 'would' IS DISTINCT FROM '"no_change"'::jsonb) AS would_change,
               count(*) FILTER (WHERE p ->> 'result' = 'matched'
                                  AND p -> 'would' = '"no_change"'::jsonb) AS no_change,
               count(*) FILTER (WHERE p ->> 'result' = 'error') AS errors
          FROM jsonb_array_elements(NEW.decision -> 'policy') p
         WHERE p ->> 'mode' = 'report' AND p ->> 'result' IN ('matched', 'error')
         GROUP BY 1, 2
    ), minutes AS (
        INSERT INTO policy_report_minutes AS m
               (minute, source_id, policy, rule, chain, would_change, no_change, errors)
        SELECT date_bin(interval '1 minute', NEW.at, TIMESTAMPTZ '1970-01-01 00:00:00+00'), NEW.source_id, c.policy, c.rule,
               coalesce(NEW.chain, '00000000-0000-0000-0000-000000000000'::uuid),
               c.would_change, c.no_change, c.errors
          FROM counted c
        ON CONFLICT (minute, source_id, policy, rule, chain) DO UPDATE
           SET would_change = m.would_change + EXCLUDED.would_change,
               no_change = m.no_change + EXCLUDED.no_change,
               errors = m.errors + EXCLUDED.errors
    )
    INSERT INTO policy_report_hours AS h
           (hour, source_id, policy, rule, chain, would_change, no_change, errors)
    SELECT date_bin(interval '1 hour', NEW.at, TIMESTAMPTZ '1970-01-01 00:00:00+00'), NEW.source_id, c.policy, c.rule,
           coalesce(NEW.chain, '00000000-0000-0000-0000-000000000000'::uuid),
           c.would_change, c.no_change, c.errors
      FROM counted c
    ON CONFLICT (hour, source_id, policy, rule, chain) DO UPDATE
       SET would_change = h.would_change + EXCLUDED.would_change,
           no_change = h.no_change + EXCLUDED.no_change,
           errors = h.errors + EXCLUDED.errors;
    RETURN NULL;
END
$$;

-- Only records with a report-only outcome run the function: for every other record the
-- cost is the WHEN test on the row in memory.
CREATE TRIGGER audit_records_policy_report AFTER INSERT ON audit_records
    FOR EACH ROW
    WHEN (NOT NEW.void AND NEW.source_id IS NOT NULL
          AND NEW.decision -> 'policy' @> '[{"mode": "report"}]')
    EXECUTE FUNCTION policy_report_count();
