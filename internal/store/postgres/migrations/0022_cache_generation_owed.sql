-- The read cache's generation (0011) moves in every transaction that changes a cached table. Inside
-- an import it moves as the import commits rather than as it writes (0013 says why: its row lock
-- would be held for the import's whole length). The setting that says "import"
-- (backoffice.import) is one any session can set, so it decides only when the generation moves,
-- never whether: under it a trigger records that its transaction owes a move, one row of
-- cache_generation_owed keyed by the transaction, and a constraint trigger deferred to the commit
-- makes the move and removes the row. Whoever sets the setting (the import, psql, a script, a
-- bug), a transaction that changes a cached table has moved the generation when it commits.
--
-- The move is owed per row written to cache_generation_owed, inserted or updated, and made
-- unconditionally: a transaction that removes its own row, or rewrites it under another
-- transaction's key, still moves the generation, and no row outlives the transaction that wrote it
-- (so none can stand in, under a later transaction's key, for a move that transaction owes). After
-- SET CONSTRAINTS ALL IMMEDIATE (the audit writer's read-back runs it) the move is made at the end
-- of each statement instead. Unlogged: a row lives only inside its transaction, which a crash
-- ends.
CREATE UNLOGGED TABLE cache_generation_owed (
  xid xid8 PRIMARY KEY
);

CREATE OR REPLACE FUNCTION cache_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('backoffice.import', true) = 'on' THEN
    INSERT INTO cache_generation_owed (xid) VALUES (pg_current_xact_id()) ON CONFLICT DO NOTHING;
    RETURN NULL;
  END IF;
  -- A new random number, not a count: a database restored from a dump (whose n a counter could have
  -- reached again since, along another history) never shows a number the cache filed answers
  -- under for other data.
  UPDATE cache_generation SET n = (random() * 9007199254740991)::bigint WHERE id = 1;
  RETURN NULL;
END
$$;

CREATE FUNCTION cache_generation_owed_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE cache_generation SET n = (random() * 9007199254740991)::bigint WHERE id = 1;
  DELETE FROM cache_generation_owed WHERE xid = NEW.xid;
  RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER cache_generation_owed_move AFTER INSERT OR UPDATE ON cache_generation_owed
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION cache_generation_owed_move();
