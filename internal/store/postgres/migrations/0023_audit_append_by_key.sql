-- audit_chain_append_tree reaches every row it reads by key: the chain's lock by its id, the head
-- by the newest seq, the tree's right edge by its stored-hash ids, the group read back by its seq
-- and id range. PostgreSQL plans each of its statements once a connection and may keep a plan it
-- made while the trail was a few rows, when reading the whole table was the cheapest way; kept
-- for the connection's life, that plan reads the whole trail on every later append, so each
-- append would cost more as the trail grows. With scans of whole tables off inside the function,
-- every plan it makes reaches rows through the tables' keys, however small the tables were.
ALTER FUNCTION audit_chain_append_tree(BIGINT, BYTEA, TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], BYTEA[], BIGINT[], BYTEA[], BYTEA[], BIGINT[], BYTEA[])
  SET enable_seqscan = off;
