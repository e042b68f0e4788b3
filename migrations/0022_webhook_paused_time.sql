-- A paused endpoint's deliveries wait in the outbox; the time they waited there is theirs,
-- not lost from their 24 hours of retries. On resume, each delivery still owed adds the time
-- it spent paused (from the later of its event and the pause); retries give up 24 hours
-- after the event plus that time.
ALTER TABLE webhook_deliveries
    ADD COLUMN held_secs double precision NOT NULL DEFAULT 0;
