-- An appender waits for the audit chain's turn at most 10 s (the busy timeout SQLite's writers
-- get), then fails with lock_not_available (55P03), which the store answers as busy: a transaction
-- that took the chain's turn and then, from inside its body, called back into the store to record
-- another event (whose own transaction waits for that turn) fails instead of waiting for itself
-- forever. The transaction's own lock_timeout is put back once the turn is granted.
CREATE OR REPLACE FUNCTION audit_chain_head() RETURNS TABLE (seq BIGINT, hash BYTEA)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  own_timeout TEXT := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', '10s', true);
  PERFORM 1 FROM audit_chain_lock WHERE id = 1 FOR UPDATE;
  PERFORM set_config('lock_timeout', own_timeout, true);
  RETURN QUERY SELECT e.seq, e.hash FROM audit_events e ORDER BY e.seq DESC LIMIT 1;
END
$$;
