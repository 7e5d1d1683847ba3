-- SAM action logs come by the million, and most of an import's time went into SQLite keeping
-- three B-trees for them (the rowid table, the random uuid key and (entity_id, pos)), with 36
-- bytes of text for each uuid. From here on:
--
-- * the table is keyed by (entity_id, pos), WITHOUT ROWID: the rows are stored in order inside
--   their entity, so a page is one range of the table itself and an import of a new entity's
--   logs appends to it;
-- * pos counts from the other end: 1 is the oldest log (list order reversed: action_date, then
--   id, ascending), the newest is MAX(pos). Logs newer than all stored ones (the usual import to
--   an entity that has logs) append after them, where counting from the newest moved every
--   stored row. Page p of size n is the range pos <= MAX(pos) - (p-1)*n, read backwards;
-- * a log's id is unique across entities in sam_action_log_ids, a key and nothing else, filled by
--   the import in id order (an append, not a random insert per row). Whatever adds or removes a
--   log keeps both tables in step: only the import adds logs, nothing removes them;
-- * uuids are their 16 bytes (a BLOB), not their 36 characters. The bytes compare as the
--   canonical text does, so "id DESC" orders as before.
--
-- Positions are computed anew on the way.

CREATE TABLE sam_action_logs_v3 (
  entity_id   BLOB NOT NULL,
  pos         INTEGER NOT NULL,
  id          BLOB NOT NULL,
  action      TEXT NOT NULL,
  action_date INTEGER NOT NULL,
  sam_id      INTEGER NOT NULL,
  PRIMARY KEY (entity_id, pos)
) WITHOUT ROWID;

INSERT INTO sam_action_logs_v3 (entity_id, pos, id, action, action_date, sam_id)
SELECT unhex(replace(entity_id, '-', '')),
       row_number() OVER (PARTITION BY entity_id ORDER BY action_date, id),
       unhex(replace(id, '-', '')), action, action_date, sam_id
FROM sam_action_logs;

CREATE TABLE sam_action_log_ids (
  id BLOB PRIMARY KEY
) WITHOUT ROWID;

INSERT INTO sam_action_log_ids (id) SELECT id FROM sam_action_logs_v3 ORDER BY id;

DROP TABLE sam_action_logs;
ALTER TABLE sam_action_logs_v3 RENAME TO sam_action_logs;
