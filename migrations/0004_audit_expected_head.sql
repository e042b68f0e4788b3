-- The audit writer keeps the chain head it last committed in memory and sends a batch in
-- one flight: BEGIN, the chain lock, this check, the inserts, COMMIT. The check fails the
-- transaction (SQLSTATE IL001) when the head is not the one the writer expects — another
-- gateway extended the chain, or the table was restored — so the inserts never commit and
-- the writer re-reads the head under the lock and retries. Expected sequence 0 means an
-- empty chain.
CREATE FUNCTION audit_expect_head(expected_seq bigint, expected_hash bytea) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    head_seq  bigint;
    head_hash bytea;
BEGIN
    SELECT seq, hash INTO head_seq, head_hash FROM audit_records ORDER BY seq DESC LIMIT 1;
    IF coalesce(head_seq, 0) <> expected_seq
       OR (head_seq IS NOT NULL AND head_hash IS DISTINCT FROM expected_hash) THEN
        RAISE EXCEPTION 'the audit chain head is not the one this writer expected'
            USING ERRCODE = 'IL001';
    END IF;
END
$$;
