-- Identity propagation as PostgreSQL roles: with 'role', every governed transaction on the
-- source also runs `SET LOCAL ROLE` (set_config('role', …, true)) to the role mapped from the
-- caller's identity in `identity_roles` ({"identity name": "postgres role"}). The mapping is
-- explicit: an identity without an entry is refused (fail closed).
ALTER TABLE sources DROP CONSTRAINT IF EXISTS sources_identity_propagation_check;
ALTER TABLE sources
    ADD CONSTRAINT sources_identity_propagation_check
        CHECK (identity_propagation IN ('none', 'settings', 'role')),
    ADD COLUMN identity_roles jsonb NOT NULL DEFAULT '{}'::jsonb
        CHECK (jsonb_typeof(identity_roles) = 'object');
