-- The read cache's generation (0011) is one row, and a transaction that moves it holds its row
-- lock to its end. An import changes cached tables from its first statement on and commits
-- seconds or minutes later: had its triggers moved the generation as it went, every writer of a
-- cached table on every replica (a key's issue or revocation, a new session) would wait for the
-- whole import. So the triggers leave the generation alone inside an import's transaction, which
-- says so with a setting of the transaction (set_config(…, true), gone at its end, so nothing
-- stays on a pooled connection), and the import moves it itself, once, just before it commits
-- or before it first takes the audit chain's head (postgres.BeginImport).
CREATE OR REPLACE FUNCTION cache_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('backoffice.import', true) = 'on' THEN
    RETURN NULL;
  END IF;
  -- A new random number, not a count: a database restored from a dump (whose n a counter could have
  -- reached again since, along another history) never shows a number the cache filed answers
  -- under for other data.
  UPDATE cache_generation SET n = (random() * 9007199254740991)::bigint WHERE id = 1;
  RETURN NULL;
END
$$;
