-- The audit trail's Merkle tree (RFC 6962, see docs/compliance.md): every stored hash of
-- golang.org/x/mod/sumdb/tlog's layout, by its stored-hash index (tlog.StoredHashIndex). Leaf i
-- is event seq i+1; its level-0 row also holds the leaf's subject tag (NULL for an event from
-- before the chain, whose leaf has a zero tag; NULL on every other level). The writer adds a
-- group's rows in the transaction that appends its events; a store opened with the master key
-- ring builds the rows of events written before this table existed (Store.BuildAuditTree).
CREATE TABLE audit_tree (
  id          INTEGER PRIMARY KEY,
  hash        BLOB NOT NULL,
  subject_tag BLOB
);
