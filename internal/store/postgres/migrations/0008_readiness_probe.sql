-- PostgreSQL twin of the SQLite migration 0007_readiness_probe (this engine has one migration more).
-- The readiness probe's table (GET /readyz) as first made: the probe inserted one row here and
-- rolled back. It now writes a temporary table in the database's default tablespace instead
-- (postgres.Engine.WriteProbe), and this table stays empty.
CREATE TABLE readiness_probe (
  filler BYTEA NOT NULL
);
