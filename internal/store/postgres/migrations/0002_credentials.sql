-- PostgreSQL twin of migrations/sqlite/0002_credentials.sql: the same columns and indexes;
-- times are BIGINT microseconds (INTEGER is 32-bit here).

-- Credentials that can be issued, listed, revoked and audited from the command line.
-- Every new column is nullable or has a default, so rows imported before this migration keep
-- working: an imported API key has no prefix and no creation time.

-- prefix is the short public part of an issued key (bo_<prefix>_<secret>), kept in plain text so a
-- leaked key can be recognised and found; the secret itself is stored only as key_hash.
ALTER TABLE api_keys ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN prefix TEXT;
ALTER TABLE api_keys ADD COLUMN created_at BIGINT;
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;
ALTER TABLE api_keys ADD COLUMN revoked_at BIGINT;
-- Unique, NULLs apart (both engines allow many NULLs in a unique index).
CREATE UNIQUE INDEX api_keys_prefix ON api_keys(prefix);
CREATE INDEX api_keys_user ON api_keys(user_id);

ALTER TABLE sessions ADD COLUMN created_at BIGINT;
ALTER TABLE sessions ADD COLUMN revoked_at BIGINT;
CREATE INDEX sessions_user ON sessions(user_id);

-- Counting SSNs per key id (keys status, the startup check) reads this index only.
CREATE INDEX principals_ssn_key ON principals(ssn_key_id);
