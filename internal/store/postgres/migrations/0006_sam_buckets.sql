-- PostgreSQL twin of the SQLite migration of the same name (see there why): SAM action logs
-- keyed by (entity_id, action_date, id), their counts in per-entity buckets, and where each id's
-- log is kept beside the id.

CREATE TABLE sam_action_logs_v6 (
  entity_id   BYTEA NOT NULL,
  action_date BIGINT NOT NULL,
  id          BYTEA NOT NULL,
  action      TEXT COLLATE "C" NOT NULL,
  sam_id      BIGINT NOT NULL,
  PRIMARY KEY (entity_id, action_date, id)
);

INSERT INTO sam_action_logs_v6 (entity_id, action_date, id, action, sam_id)
SELECT entity_id, action_date, id, action, sam_id FROM sam_action_logs ORDER BY entity_id, action_date, id;

DROP TABLE sam_action_logs;
ALTER TABLE sam_action_logs_v6 RENAME TO sam_action_logs;
ALTER INDEX sam_action_logs_v6_pkey RENAME TO sam_action_logs_pkey;

CREATE TABLE sam_log_buckets (
  entity_id  BYTEA NOT NULL,
  start_date BIGINT NOT NULL,
  start_id   BYTEA NOT NULL,
  n          BIGINT NOT NULL,
  below      BIGINT NOT NULL,
  PRIMARY KEY (entity_id, start_date, start_id)
);

INSERT INTO sam_log_buckets (entity_id, start_date, start_id, n, below)
SELECT entity_id,
       CASE WHEN rn = 1 THEN -9223372036854775808 ELSE action_date END,
       CASE WHEN rn = 1 THEN '\x'::bytea ELSE id END,
       LEAST(256, total - rn + 1), rn - 1
FROM (SELECT entity_id, action_date, id,
             row_number() OVER (PARTITION BY entity_id ORDER BY action_date, id) AS rn,
             count(*) OVER (PARTITION BY entity_id) AS total
      FROM sam_action_logs) AS r
WHERE (rn - 1) % 256 = 0;

CREATE INDEX sam_log_buckets_rank ON sam_log_buckets (entity_id, below, start_date, start_id);

DROP TABLE sam_action_log_ids;
CREATE TABLE sam_action_log_ids (
  id          BYTEA PRIMARY KEY,
  entity_id   BYTEA NOT NULL,
  action_date BIGINT NOT NULL
);
INSERT INTO sam_action_log_ids (id, entity_id, action_date)
SELECT id, entity_id, action_date FROM sam_action_logs ORDER BY id;
