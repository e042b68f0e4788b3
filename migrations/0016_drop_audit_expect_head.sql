-- Since 0015 every audit writer appends to a chain of its own and no longer checks a shared
-- head, so nothing calls audit_expect_head (0004) any more. A replica still running a build
-- from before 0015 cannot write to the log 0015 made anyway.
DROP FUNCTION IF EXISTS audit_expect_head(bigint, bytea);
