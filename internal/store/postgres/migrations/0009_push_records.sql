-- PostgreSQL twin of the SQLite migration 0008_push_records; times are BIGINT microseconds.
-- The record of a push that may reach the gateway (operation 4.1), one per line item (its lease
-- lets one push run at a time): written before the push's first request to the gateway, its
-- attempts counted before each, and replaced by the push's merchant note in the transaction that
-- writes the note. A record left behind (its process stopped, or the database refused the note)
-- is noted by the next push of the line item, or once its holder's lease has expired.
CREATE TABLE push_records (
  line_item_id TEXT PRIMARY KEY,
  holder       TEXT NOT NULL,
  merchant_id  TEXT NOT NULL,
  user_id      TEXT NOT NULL,
  terminal_id  TEXT NOT NULL,
  started_at   BIGINT NOT NULL,
  attempts     INTEGER NOT NULL
);
