-- OpenTelemetry (issue 30): the W3C traceparent of the call that queued an approval and of
-- each approver's decision, so the later execution's trace links to both.
ALTER TABLE approvals ADD COLUMN trace_context text;
ALTER TABLE approval_decisions ADD COLUMN trace_context text;
