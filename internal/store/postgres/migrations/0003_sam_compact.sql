-- PostgreSQL twin of migrations/sqlite/0003_sam_compact.sql (see there why): SAM action logs
-- keyed by (entity_id, pos) with pos 1 the oldest, their ids unique in sam_action_log_ids, uuids
-- as their 16 bytes.
-- bytea compares bytewise, as the "C"-collated canonical text did, so "id DESC" orders as before.

CREATE TABLE sam_action_logs_v3 (
  entity_id   BYTEA NOT NULL,
  pos         BIGINT NOT NULL,
  id          BYTEA NOT NULL,
  action      TEXT COLLATE "C" NOT NULL,
  action_date BIGINT NOT NULL,
  sam_id      BIGINT NOT NULL,
  PRIMARY KEY (entity_id, pos)
);

INSERT INTO sam_action_logs_v3 (entity_id, pos, id, action, action_date, sam_id)
SELECT decode(replace(entity_id, '-', ''), 'hex'),
       row_number() OVER (PARTITION BY entity_id ORDER BY action_date, id),
       decode(replace(id, '-', ''), 'hex'), action, action_date, sam_id
FROM sam_action_logs;

CREATE TABLE sam_action_log_ids (
  id BYTEA PRIMARY KEY
);

INSERT INTO sam_action_log_ids (id) SELECT id FROM sam_action_logs_v3 ORDER BY id;

DROP TABLE sam_action_logs;
ALTER TABLE sam_action_logs_v3 RENAME TO sam_action_logs;
ALTER INDEX sam_action_logs_v3_pkey RENAME TO sam_action_logs_pkey;
