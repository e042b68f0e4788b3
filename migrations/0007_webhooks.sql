-- Signed notifications to operators' endpoints (see src/webhooks/), delivered from an
-- outbox: at least once, across restarts and replicas, retried for up to 24 hours.
CREATE TABLE webhooks (
    id         uuid PRIMARY KEY,
    url        text NOT NULL,
    events     text[] NOT NULL,
    -- Standard Webhooks secret: "whsec_" and the base64 of the HMAC key.
    secret     text NOT NULL,
    format     text NOT NULL DEFAULT 'standard' CHECK (format IN ('standard', 'slack')),
    created_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    webhook_id      uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event           text NOT NULL,
    payload         jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    gave_up_at      timestamptz,
    last_error      text
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE delivered_at IS NULL AND gave_up_at IS NULL;
CREATE INDEX webhook_deliveries_of ON webhook_deliveries (webhook_id, created_at);
