-- PostgreSQL twin of the SQLite migration 0007_readiness_probe (this engine has one migration more).
-- The readiness probe's table (GET /readyz): the probe inserts one row and rolls back, so that a
-- server that takes no insert (a standby, a full disk) is not ready. It never holds a row.
CREATE TABLE readiness_probe (
  filler BYTEA NOT NULL
);
