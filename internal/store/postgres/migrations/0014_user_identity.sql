-- PostgreSQL twin of migrations/sqlite/0013_user_identity.sql.
--
-- What an access token from the organisation's identity provider needs of a user
-- (docs/credentials.md#sign-in-with-the-organisations-identity-provider).
--
-- external_id is the id the provider knows the user by, when the service is configured to match a
-- token's user claim against it (BACKOFFICE_OAUTH_USER_MATCH=external_id): unique, NULLs apart.
-- disabled refuses every credential of the user: API keys, sessions and access tokens.
ALTER TABLE users ADD COLUMN external_id TEXT COLLATE "C";
ALTER TABLE users ADD COLUMN disabled BOOLEAN NOT NULL DEFAULT false;
CREATE UNIQUE INDEX users_external_id ON users(external_id);

-- The credential lookups read both columns now: the read cache's trigger must watch them
-- (migration 0011).
DROP TRIGGER users_cache ON users;
CREATE TRIGGER users_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, partner_id, permissions, external_id, disabled ON users
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();
