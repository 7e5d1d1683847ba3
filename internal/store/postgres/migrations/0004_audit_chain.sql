-- The audit trail becomes a hash chain (see docs/compliance.md). Every event gets a sequence
-- number (commit order, from 1, no gaps) and, from this migration on, the id of the master key
-- its link was made under and its link: HMAC-SHA-256 under a key derived from that master key,
-- of the previous link and the event. SQL cannot compute links (it has no key), so events written
-- before this migration are numbered, oldest first, and stay unchained: `audit verify` counts them
-- as legacy events before the chain's first link.
ALTER TABLE audit_events ADD COLUMN seq BIGINT;
ALTER TABLE audit_events ADD COLUMN chain_key_id TEXT COLLATE "C";
ALTER TABLE audit_events ADD COLUMN hash BYTEA;

UPDATE audit_events SET seq = n.seq
FROM (SELECT id, row_number() OVER (ORDER BY at, id) AS seq FROM audit_events) AS n
WHERE audit_events.id = n.id;

-- The list is newest first by seq; the chain's head is the row with the highest seq. The two
-- filters that answer the usual questions (what did this user do; who saw this principal's SSN)
-- have an index ending in seq, so their page is a backward range scan that skips only newer
-- entries. Every index costs each audit write, so the other filters (action, outcome, time) walk
-- the seq index newest first instead (as on SQLite).
CREATE UNIQUE INDEX audit_events_seq ON audit_events(seq);
CREATE INDEX audit_events_actor_seq ON audit_events(actor_user_id, seq);
CREATE INDEX audit_events_target_seq ON audit_events(target_id, seq);

-- The chain's lock: every transaction that appends events locks this row first (SELECT … FOR
-- UPDATE), so appenders of every replica take turns, one lock per group commit.
CREATE TABLE audit_chain_lock (
  id INTEGER PRIMARY KEY CHECK (id = 1)
);
INSERT INTO audit_chain_lock (id) VALUES (1);
