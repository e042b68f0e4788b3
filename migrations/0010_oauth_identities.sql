-- Identities reached by OAuth access tokens (src/oauth, src/pipeline/identity.rs).
-- Revoking an identity's tokens refuses every token issued (iat) at or before this moment;
-- a token without iat is refused once any revocation is recorded.
ALTER TABLE identities ADD COLUMN tokens_revoked_before timestamptz;
-- Grants derived from the token's group claim (oauth.group_roles) are kept in step with the
-- token on every sign-in; grants made by operators are never touched by that.
ALTER TABLE role_grants ADD COLUMN via_claim boolean NOT NULL DEFAULT false;
