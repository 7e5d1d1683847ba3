-- audit_chain_append_tree reads back every tree row from the group's first on, not only the
-- group's own: a row past them (written by hand, far past the tree's end) is one the group did not
-- write, and fails it (ZC002, nothing committed), where it passed unseen and the tree then held
-- more leaves than the trail. The function is otherwise 0020's with 0023's setting. This changes
-- the trail's catalog: replicas of the release before hold their trail once it has run, so replace
-- them all at once.
CREATE OR REPLACE FUNCTION audit_chain_append_tree(
  prev_seq BIGINT, prev_hash BYTEA,
  ids TEXT[], ats BIGINT[], actors TEXT[], actions TEXT[], targets TEXT[], outcomes TEXT[],
  details TEXT[], seqs BIGINT[], key_ids TEXT[], hashes BYTEA[],
  tree_ids BIGINT[], tree_hashes BYTEA[], tree_tags BYTEA[], edge_ids BIGINT[], edge_hashes BYTEA[]
) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
DECLARE
  own_timeout TEXT := current_setting('lock_timeout');
  head_seq BIGINT;
  head_hash BYTEA;
  n BIGINT := cardinality(ids);
  landed TEXT;
  present BIGINT;
  matching BIGINT;
  edge_found BIGINT;
  tree_present BIGINT;
  tree_matching BIGINT;
BEGIN
  PERFORM set_config('lock_timeout', '10s', true);
  PERFORM 1 FROM audit_chain_lock WHERE id = 1 FOR UPDATE;
  PERFORM set_config('lock_timeout', own_timeout, true);
  SELECT e.seq, e.hash INTO head_seq, head_hash FROM audit_events e ORDER BY e.seq DESC LIMIT 1;
  IF (COALESCE(head_seq, 0), head_hash) IS DISTINCT FROM (prev_seq, prev_hash) THEN
    RAISE EXCEPTION 'audit chain head moved: it is % now, not %', COALESCE(head_seq, 0), prev_seq
      USING ERRCODE = 'ZC001';
  END IF;
  -- The rows are reached by id (t.id = ANY), one index step each: joined on the unnest alone,
  -- the planner may scan the whole table.
  SELECT count(*) INTO edge_found
    FROM audit_tree t JOIN unnest(edge_ids, edge_hashes) AS g(id, hash) ON t.id = g.id AND t.hash = g.hash
   WHERE t.id = ANY(edge_ids);
  IF edge_found <> COALESCE(cardinality(edge_ids), 0) THEN
    RAISE EXCEPTION 'audit tree: % of the % stored hashes the group was computed from are there as they were written', edge_found, COALESCE(cardinality(edge_ids), 0)
      USING ERRCODE = 'ZC003';
  END IF;
  INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail, seq, chain_key_id, hash)
  SELECT * FROM unnest(ids, ats, actors, actions, targets, outcomes, details, seqs, key_ids, hashes);
  INSERT INTO audit_tree (id, hash, subject_tag)
  SELECT * FROM unnest(tree_ids, tree_hashes, tree_tags);
  SET CONSTRAINTS ALL IMMEDIATE;
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
  SELECT count(*),
         count(*) FILTER (WHERE t.hash = w.hash AND t.subject_tag IS NOT DISTINCT FROM w.tag)
    INTO tree_present, tree_matching
    FROM audit_tree t
    LEFT JOIN unnest(tree_ids, tree_hashes, tree_tags) AS w(id, hash, tag) ON t.id = w.id
   WHERE t.id >= tree_ids[1];
  IF present <> n OR matching <> n OR tree_present <> cardinality(tree_ids) OR tree_matching <> cardinality(tree_ids) THEN
    SELECT COALESCE(json_agg(json_build_object('id', e.id, 'at', e.at, 'actor_user_id', e.actor_user_id,
        'action', e.action, 'target_id', e.target_id, 'outcome', e.outcome, 'detail', e.detail, 'seq', e.seq,
        'chain_key_id', e.chain_key_id, 'hash', encode(e.hash, 'hex')) ORDER BY e.seq)::text, '[]')
      INTO landed
      FROM audit_events e WHERE e.seq BETWEEN seqs[1] AND seqs[n];
    RAISE EXCEPTION 'audit events did not land as written: % of % read back as written, % rows at their seqs; % of % tree rows read back as written, % rows at their ids',
      matching, n, present, tree_matching, cardinality(tree_ids), tree_present
      USING ERRCODE = 'ZC002', DETAIL = landed;
  END IF;
  RETURN matching;
END
$$;
