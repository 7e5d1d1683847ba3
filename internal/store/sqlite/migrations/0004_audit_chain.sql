-- The audit trail becomes a hash chain (see docs/compliance.md). Every event gets a sequence
-- number (commit order, from 1, no gaps) and, from this migration on, the id of the master key
-- its link was made under and its link: HMAC-SHA-256 under a key derived from that master key,
-- of the previous link and the event. SQL cannot compute links (it has no key), so events written
-- before this migration are numbered, oldest first, and stay unchained: `audit verify` counts them
-- as legacy events before the chain's first link.
--
-- seq is the rowid (INTEGER PRIMARY KEY): events are appended in seq order, so the table itself is
-- the seq index and the chain's head is its last row, with no index or row of its own to write on
-- every commit. Every index costs each decrypt's commit a page, so there are as few as the list's
-- filters need.
CREATE TABLE audit_events_v4 (
  seq           INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  at            INTEGER NOT NULL,
  actor_user_id TEXT NOT NULL,
  action        TEXT NOT NULL,
  target_id     TEXT NOT NULL,
  outcome       TEXT NOT NULL,
  detail        TEXT NOT NULL,
  chain_key_id  TEXT,
  hash          BLOB
);

INSERT INTO audit_events_v4 (seq, id, at, actor_user_id, action, target_id, outcome, detail)
SELECT row_number() OVER (ORDER BY at, id), id, at, actor_user_id, action, target_id, outcome, detail
FROM audit_events;

DROP TABLE audit_events;
ALTER TABLE audit_events_v4 RENAME TO audit_events;

-- The list is newest first by seq. The two filters that answer the usual questions (what did this
-- user do; who saw this principal's SSN) have an index ending in seq, so their page is a backward
-- range scan that skips only newer entries. Every index costs each commit of an audit group a WAL
-- page (measured: see docs/compliance.md), so the other filters (action, outcome, time) walk the
-- table newest first instead.
CREATE INDEX audit_events_actor_seq ON audit_events(actor_user_id, seq);
CREATE INDEX audit_events_target_seq ON audit_events(target_id, seq);
