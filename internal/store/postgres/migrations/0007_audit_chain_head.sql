-- Appending to the audit chain took two round trips per group commit: lock the chain (the row
-- lock on audit_chain_lock), then read its head in a second statement, one that starts after the
-- lock is granted and so sees the previous appender's commit. One function now does both: under
-- READ COMMITTED each statement of a volatile function takes a fresh snapshot, so the head read
-- after the lock is the committed one. The lock is the same row lock, so replicas of the previous
-- version still take turns with this one during a rolling deploy. (SQLite has one writer at a
-- time and reads the head alone: it needs no such function.)
CREATE FUNCTION audit_chain_head() RETURNS TABLE (seq BIGINT, hash BYTEA)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM audit_chain_lock WHERE id = 1 FOR UPDATE;
  RETURN QUERY SELECT e.seq, e.hash FROM audit_events e ORDER BY e.seq DESC LIMIT 1;
END
$$;
