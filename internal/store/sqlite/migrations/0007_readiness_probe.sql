-- The readiness probe's table (GET /readyz): the probe inserts one row larger than a page, so that
-- SQLite must find new pages for it, and rolls back. It never holds a row.
CREATE TABLE readiness_probe (
  filler BLOB NOT NULL
);
