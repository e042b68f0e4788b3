-- Webhooks managed from the console (issue 31): an endpoint may be paused (its deliveries
-- wait in the outbox) and its secret rotated without a gap: until previous_until, each
-- delivery is signed with the new secret and the previous one (Standard Webhooks allows
-- several signatures in webhook-signature), so the receiver can switch when it is ready.
ALTER TABLE webhooks
    ADD COLUMN paused_at timestamptz,
    ADD COLUMN previous_secret text,
    ADD COLUMN previous_until timestamptz;
