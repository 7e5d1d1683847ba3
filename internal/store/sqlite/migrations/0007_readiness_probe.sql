-- The readiness probe's table (GET /readyz): the probe inserts one row larger than a page, so that
-- SQLite must find new pages for it, deletes it and commits (SQLite writes the WAL only at commit,
-- so a rollback would prove nothing of the sync). It holds no row between probes.
CREATE TABLE readiness_probe (
  filler BLOB NOT NULL
);
