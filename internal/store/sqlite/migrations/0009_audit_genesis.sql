-- The audit chain's genesis (see docs/compliance.md): where the chain begins, fixed under the
-- master key. last_unlinked_seq is the newest event written before the chain existed (0 when
-- there is none); every event after it must be linked. SQL has no key to seal it with, so the row
-- is made here unsealed, naming what the trail holds now, and `serve` seals it (chain_key_id, mac)
-- when it starts; from then on `audit verify` fails on an unlinked event after it, and on a
-- genesis changed or removed.
CREATE TABLE audit_chain_genesis (
  id                INTEGER PRIMARY KEY CHECK (id = 1),
  last_unlinked_seq INTEGER NOT NULL,
  chain_key_id      TEXT,
  mac               BLOB
);
INSERT INTO audit_chain_genesis (id, last_unlinked_seq)
SELECT 1, COALESCE((SELECT MIN(seq) - 1 FROM audit_events WHERE hash IS NOT NULL), (SELECT MAX(seq) FROM audit_events), 0);
