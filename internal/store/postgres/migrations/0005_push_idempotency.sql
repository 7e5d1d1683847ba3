-- PostgreSQL twin of the SQLite migration of the same name; times are BIGINT microseconds.
-- The kept answers of pushes made with an Idempotency-Key (operation 4.1). A key belongs to the
-- user who sent it: another user's identical key is another row. key_hash is SHA-256 of the key,
-- so the table holds no caller text. status and body are NULL while the first request runs.
-- expires_at is when the row is forgotten: the kept answer's end, or, while the first request
-- runs, the end of its claim (so that a crashed request's key is free again).
CREATE TABLE push_idempotency (
  user_id       TEXT NOT NULL,
  key_hash      BYTEA NOT NULL,
  line_item_id  TEXT NOT NULL,
  status        INTEGER,
  body          BYTEA,
  expires_at    BIGINT NOT NULL,
  PRIMARY KEY (user_id, key_hash)
);
CREATE INDEX push_idempotency_expiry ON push_idempotency(expires_at);
