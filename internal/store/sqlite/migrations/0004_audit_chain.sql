-- The audit trail becomes a hash chain (see docs/compliance.md). Every event gets a sequence
-- number (commit order, from 1, no gaps) and, from this migration on, the id of the master key
-- its link was made under and its link: HMAC-SHA-256 under a key derived from that master key,
-- of the previous link and the event. SQL cannot compute links (it has no key), so events written
-- before this migration are numbered, oldest first, and stay unchained: `audit verify` counts them
-- as legacy events before the chain's first link.
ALTER TABLE audit_events ADD COLUMN seq INTEGER;
ALTER TABLE audit_events ADD COLUMN chain_key_id TEXT;
ALTER TABLE audit_events ADD COLUMN hash BLOB;

UPDATE audit_events SET seq = n.seq
FROM (SELECT id, row_number() OVER (ORDER BY at, id) AS seq FROM audit_events) AS n
WHERE audit_events.id = n.id;

-- The list is newest first by seq, filtered by one column or none: each filter's index ends in
-- seq, so a page is a backward range scan that skips only newer entries.
CREATE UNIQUE INDEX audit_events_seq ON audit_events(seq);
CREATE INDEX audit_events_actor_seq ON audit_events(actor_user_id, seq);
CREATE INDEX audit_events_target_seq ON audit_events(target_id, seq);
CREATE INDEX audit_events_action_seq ON audit_events(action, seq);
CREATE INDEX audit_events_outcome_seq ON audit_events(outcome, seq);
CREATE INDEX audit_events_at ON audit_events(at);

-- The chain's head: one row, the newest sequence number and link. Every writer locks it (an
-- UPDATE) in the transaction that appends events, so writers of every process append one after
-- the other, one lock per group commit. hash is NULL until the first chained event.
CREATE TABLE audit_chain_head (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  seq  INTEGER NOT NULL,
  hash BLOB
);
INSERT INTO audit_chain_head (id, seq, hash) SELECT 1, COALESCE(MAX(seq), 0), NULL FROM audit_events;
