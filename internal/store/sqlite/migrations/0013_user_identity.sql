-- What an access token from the organisation's identity provider needs of a user
-- (docs/credentials.md#sign-in-with-the-organisations-identity-provider).
--
-- external_id is the id the provider knows the user by, when the service is configured to match a
-- token's user claim against it (BACKOFFICE_OAUTH_USER_MATCH=external_id): unique, NULLs apart.
-- disabled refuses every credential of the user: API keys, sessions and access tokens.
ALTER TABLE users ADD COLUMN external_id TEXT;
ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1));
CREATE UNIQUE INDEX users_external_id ON users(external_id);

-- The credential lookups read both columns now: the read cache's trigger must watch them
-- (migration 0010).
DROP TRIGGER users_cache_update;
CREATE TRIGGER users_cache_update AFTER UPDATE OF id, partner_id, permissions, external_id, disabled ON users BEGIN UPDATE cache_generation SET n = random(); END;
