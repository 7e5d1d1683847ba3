-- The audit writer's group commit in one round trip. A group took four: BEGIN, the chain's head
-- (audit_chain_head), the INSERT, COMMIT, each a wait on the network and a turn of both
-- processes. The writer knows the head it committed last, links the next group after it in Go
-- (SQL has no key), and sends this one statement, run in a transaction of its own: it takes the
-- chain's turn (the same row lock as audit_chain_head, so replicas of every version still take
-- turns), reads the head, which a statement of a volatile function reads afresh after the lock is
-- granted, and inserts the events only if the head is still the one they were linked after.
-- Otherwise (another replica, or a transaction of this process that recorded its own event,
-- appended since) it fails with SQLSTATE ZC001 and writes nothing: the writer then appends the
-- group in a transaction that reads the head under the lock first (audit_chain_head), as before.
-- Failing rolls back, so a head that moved costs a round trip and no sync of the log.
CREATE FUNCTION audit_chain_append(
  prev_seq BIGINT, prev_hash BYTEA,
  ids TEXT[], ats BIGINT[], actors TEXT[], actions TEXT[], targets TEXT[], outcomes TEXT[],
  details TEXT[], seqs BIGINT[], key_ids TEXT[], hashes BYTEA[]
) RETURNS VOID
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  own_timeout TEXT := current_setting('lock_timeout');
  head_seq BIGINT;
  head_hash BYTEA;
BEGIN
  PERFORM set_config('lock_timeout', '10s', true);
  PERFORM 1 FROM audit_chain_lock WHERE id = 1 FOR UPDATE;
  PERFORM set_config('lock_timeout', own_timeout, true);
  SELECT e.seq, e.hash INTO head_seq, head_hash FROM audit_events e ORDER BY e.seq DESC LIMIT 1;
  IF (COALESCE(head_seq, 0), head_hash) IS DISTINCT FROM (prev_seq, prev_hash) THEN
    RAISE EXCEPTION 'audit chain head moved: it is % now, not %', COALESCE(head_seq, 0), prev_seq
      USING ERRCODE = 'ZC001';
  END IF;
  INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash)
  SELECT * FROM unnest(ids, ats, actors, actions, targets, outcomes, details, seqs, key_ids, hashes);
END
$$;
