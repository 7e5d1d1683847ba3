-- SAM action logs keyed by their list order, counted in buckets: a late log no longer rewrites
-- its entity (docs/performance.md, "Late SAM action logs").
--
-- Until 0005 a log's key was (entity_id, pos), pos its dense rank from the entity's oldest log:
-- any page was one range of the key, but a log older than some stored ones moved every position
-- above it, about 11 s per million logs with the write lock held. From here on:
--
-- * sam_action_logs is keyed by (entity_id, action_date, id), the list order itself (read
--   backwards): a late log is one insert where it belongs and nothing else of the table moves;
-- * sam_log_buckets cuts each entity's logs into buckets of consecutive logs (about 256; the
--   import splits one past twice that, and joins a small one to the next). A bucket is named
--   by where it starts, (start_date, start_id): it holds the entity's logs from there up to the
--   next bucket's start. The first bucket of an entity starts below every log (the smallest
--   integer and an empty id), so that every log, however old, falls in a bucket. n is how many
--   logs it holds, below how many of the entity's logs are older than its start;
-- * the index (entity_id, below, …) finds in one probe the bucket that holds a given rank, and
--   the entity's total is its newest bucket's below + n, one probe too. A page reads the logs
--   from that bucket's end, newest first, skipping fewer logs than the bucket holds: a deep page
--   costs about what the first one does. A late log changes its bucket's n and the below of the
--   newer buckets: about 3,900 small rows for an entity of a million logs, in one ranged UPDATE.
--   Buckets of 256 keep the skip of a deep page small (about 190 ns a row on SQLite: buckets of
--   1,000 made page 50,000 five times page 1) at four times the rows a late log moves.
-- * sam_action_log_ids keeps, beside each id, where its log is (entity_id, action_date: with the
--   id, the log's key), so that a replaced or deleted log is found by its id in one probe, where
--   it was a scan of its entity (about 0.4 s per 256 ids in an entity of a million logs).
--
-- The logs move over in key order (what pos was), and the buckets are cut every 256 logs.

CREATE TABLE sam_action_logs_v6 (
  entity_id   BLOB NOT NULL,
  action_date INTEGER NOT NULL,
  id          BLOB NOT NULL,
  action      TEXT NOT NULL,
  sam_id      INTEGER NOT NULL,
  PRIMARY KEY (entity_id, action_date, id)
) WITHOUT ROWID;

INSERT INTO sam_action_logs_v6 (entity_id, action_date, id, action, sam_id)
SELECT entity_id, action_date, id, action, sam_id FROM sam_action_logs ORDER BY entity_id, action_date, id;

DROP TABLE sam_action_logs;
ALTER TABLE sam_action_logs_v6 RENAME TO sam_action_logs;

CREATE TABLE sam_log_buckets (
  entity_id  BLOB NOT NULL,
  start_date INTEGER NOT NULL,
  start_id   BLOB NOT NULL,
  n          INTEGER NOT NULL,
  below      INTEGER NOT NULL,
  PRIMARY KEY (entity_id, start_date, start_id)
) WITHOUT ROWID;

INSERT INTO sam_log_buckets (entity_id, start_date, start_id, n, below)
SELECT entity_id,
       CASE WHEN rn = 1 THEN -9223372036854775808 ELSE action_date END,
       CASE WHEN rn = 1 THEN x'' ELSE id END,
       MIN(256, total - rn + 1), rn - 1
FROM (SELECT entity_id, action_date, id,
             row_number() OVER (PARTITION BY entity_id ORDER BY action_date, id) AS rn,
             count(*) OVER (PARTITION BY entity_id) AS total
      FROM sam_action_logs) AS r
WHERE (rn - 1) % 256 = 0;

CREATE INDEX sam_log_buckets_rank ON sam_log_buckets (entity_id, below, start_date, start_id);

DROP TABLE sam_action_log_ids;
CREATE TABLE sam_action_log_ids (
  id          BLOB PRIMARY KEY,
  entity_id   BLOB NOT NULL,
  action_date INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO sam_action_log_ids (id, entity_id, action_date)
SELECT id, entity_id, action_date FROM sam_action_logs ORDER BY id;
