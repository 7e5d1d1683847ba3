-- The strength of each credential's secret, in bits, which its hash cannot tell: the estimate the
-- import made (secrets.CredentialStrength), or 256 for a key or session the service issued. NULL
-- for one imported before the strength rule: it cannot be judged any more, so it counts as weak.
-- serve refuses to start while a usable credential is weak (see docs/credentials.md).
ALTER TABLE api_keys ADD COLUMN secret_bits INTEGER;
ALTER TABLE sessions ADD COLUMN secret_bits INTEGER;
-- Issued credentials are the ones with a creation time (an issued key also has a prefix).
UPDATE api_keys SET secret_bits = 256 WHERE created_at IS NOT NULL AND prefix IS NOT NULL;
UPDATE sessions SET secret_bits = 256 WHERE created_at IS NOT NULL;
