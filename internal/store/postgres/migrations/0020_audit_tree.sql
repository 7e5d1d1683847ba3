-- The audit trail's Merkle tree (RFC 6962, see docs/compliance.md): every stored hash of
-- golang.org/x/mod/sumdb/tlog's layout, by its stored-hash index (tlog.StoredHashIndex). Leaf i
-- is event seq i+1; its level-0 row also holds the leaf's subject tag (NULL for an event from
-- before the chain, whose leaf has a zero tag; NULL on every other level). The writer adds a
-- group's rows in the transaction that appends its events; a store opened with the master key
-- ring builds the rows of events written before this table existed (Store.BuildAuditTree).
CREATE TABLE audit_tree (
  id          BIGINT PRIMARY KEY,
  hash        BYTEA NOT NULL,
  subject_tag BYTEA
);

-- audit_chain_append_read (0019) with the tree: the group's events and the stored hashes they
-- add, appended in one statement if the chain's head is still prev_seq/prev_hash and the tree's
-- right edge (the stored hashes the new ones were computed from, edge_ids/edge_hashes) is still
-- there as given, and read back, events and tree rows, before the commit. A head that moved
-- fails with ZC001, an edge that is not there (a tree row deleted or altered) with ZC003, and
-- rows that do not read back as given with ZC002 (the events read back in its detail), nothing
-- committed. The functions before it stay for replicas of the versions before, which write no
-- tree: their next group after this one's fails on the edge, so every replica must be upgraded.
CREATE FUNCTION audit_chain_append_tree(
  prev_seq BIGINT, prev_hash BYTEA,
  ids TEXT[], ats BIGINT[], actors TEXT[], actions TEXT[], targets TEXT[], outcomes TEXT[],
  details TEXT[], seqs BIGINT[], key_ids TEXT[], hashes BYTEA[],
  tree_ids BIGINT[], tree_hashes BYTEA[], tree_tags BYTEA[], edge_ids BIGINT[], edge_hashes BYTEA[]
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
   WHERE t.id BETWEEN tree_ids[1] AND tree_ids[cardinality(tree_ids)];
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
