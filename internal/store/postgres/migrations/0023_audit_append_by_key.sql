-- audit_chain_append_tree reaches every row it reads by key: the chain's lock by its id, the head
-- by the newest seq, the tree's right edge by its stored-hash ids, the group read back by its seq
-- and id ranges. PostgreSQL plans each of its statements once a connection and keeps the plan
-- until the table is next analyzed; a plan made while the trail was a few rows, analyzed as such,
-- reads the whole table, so each append until the next analysis would read the whole trail. With
-- scans of whole tables off inside the function, every plan it makes reaches rows through the
-- tables' keys, however small the tables were. This changes the trail's catalog: replicas of the
-- release before hold their trail once it has run, so replace them all at once.
ALTER FUNCTION audit_chain_append_tree(BIGINT, BYTEA, TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], BYTEA[], BIGINT[], BYTEA[], BYTEA[], BIGINT[], BYTEA[])
  SET enable_seqscan = off;
