-- The audit writer's one-statement append (0018) reads back what it wrote, in its own
-- transaction, before the commit: an INSERT that returns without an error has not shown that its
-- rows are there (a BEFORE trigger returning NULL drops a row, an AFTER trigger or a rule can
-- delete or alter it, a policy can hide it). After the insert it runs the triggers deferred to
-- the commit (SET CONSTRAINTS ALL IMMEDIATE), reads the rows at the group's seqs, and compares
-- them, every column, with the rows it was given: the number of rows it read that are exactly
-- those is its answer, and anything else (a row missing, added or different) fails it with
-- SQLSTATE ZC002, nothing committed, the rows it read in the error's detail (JSON) for the writer
-- to name what differs. audit_chain_append stays for replicas of the version before.
CREATE FUNCTION audit_chain_append_read(
  prev_seq BIGINT, prev_hash BYTEA,
  ids TEXT[], ats BIGINT[], actors TEXT[], actions TEXT[], targets TEXT[], outcomes TEXT[],
  details TEXT[], seqs BIGINT[], key_ids TEXT[], hashes BYTEA[]
) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  own_timeout TEXT := current_setting('lock_timeout');
  head_seq BIGINT;
  head_hash BYTEA;
  n BIGINT := cardinality(ids);
  landed TEXT;
  present BIGINT;
  matching BIGINT;
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
  SET CONSTRAINTS ALL IMMEDIATE;
  -- One scan of the group's seqs counts the rows there and those exactly as written. The columns
  -- are compared in the FILTER, not the join, so that the planner reaches the rows by seq alone
  -- (a join on target_id lets it choose that index, which reads every earlier event of the
  -- principal).
  SELECT count(*),
         count(*) FILTER (WHERE e.id = w.id AND e.at = w.at AND e.actor_user_id = w.actor_user_id
           AND e.action = w.action AND e.target_id = w.target_id AND e.outcome = w.outcome
           AND e.detail = w.detail AND e.chain_key_id = w.chain_key_id AND e.hash = w.hash)
    INTO present, matching
    FROM audit_events e
    LEFT JOIN unnest(ids, ats, actors, actions, targets, outcomes, details, seqs, key_ids, hashes)
      AS w(id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash)
      ON e.seq = w.seq
   WHERE e.seq BETWEEN seqs[1] AND seqs[n];
  IF present <> n OR matching <> n THEN
    SELECT COALESCE(json_agg(json_build_object('id', e.id, 'at', e.at, 'actor_user_id', e.actor_user_id,
        'action', e.action, 'target_id', e.target_id, 'outcome', e.outcome, 'detail', e.detail, 'seq', e.seq,
        'chain_key_id', e.chain_key_id, 'hash', encode(e.hash, 'hex')) ORDER BY e.seq)::text, '[]')
      INTO landed
      FROM audit_events e WHERE e.seq BETWEEN seqs[1] AND seqs[n];
    RAISE EXCEPTION 'audit events did not land as written: % of % read back as written, % rows at their seqs', matching, n, present
      USING ERRCODE = 'ZC002', DETAIL = landed;
  END IF;
  RETURN matching;
END
$$;
