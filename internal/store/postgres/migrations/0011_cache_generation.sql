-- The read cache's generation (internal/store/cache.go, docs/architecture.md "The read cache").
-- The cache keeps the answers of the per-request reads (credentials, service acceptance, sealed
-- SSNs, SAM log pages) filed under n, and empties when a request finds n moved. The triggers below
-- move n in the same transaction as any change to what those reads read, whoever makes it: this
-- service, a CLI command, another replica, psql. They fire on INSERT and DELETE and on an UPDATE
-- of the columns a cached read reads, and on nothing else: not on a key's last use (stamped as
-- keys are used), not on the audit trail, which no cached read reads, so decrypts' audit commits
-- leave the cache valid. TestTriggersCoverWhatCachedReadsRead (internal/store/cachecover_test.go)
-- fails while a column a cached read reads lacks its trigger.
--
-- Statement triggers: one COPY or multi-row statement moves n once. The row lock on
-- cache_generation is held from a transaction's first change to a cached table to its end, so
-- such transactions take turns; an import takes it only at its end (0013). TRUNCATE moves it too.
CREATE TABLE cache_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n  BIGINT NOT NULL
);
INSERT INTO cache_generation (id, n) VALUES (1, 0);

CREATE FUNCTION cache_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A new random number, not a count: a database restored from a dump (whose n a counter could have
  -- reached again since, along another history) never shows a number the cache filed answers
  -- under for other data.
  UPDATE cache_generation SET n = (random() * 9007199254740991)::bigint WHERE id = 1;
  RETURN NULL;
END
$$;


-- users: the credential lookup.
CREATE TRIGGER users_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, partner_id, permissions ON users
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- api_keys: the credential lookup; not last_used_at, stamped on use.
CREATE TRIGGER api_keys_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, user_id, key_hash, expires_at, revoked_at ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- sessions: the credential lookup.
CREATE TRIGGER sessions_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, user_id, token_hash, expires_at, revoked_at ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- leads: acceptance, sealed SSNs (the owner), SAM pages (visibility).
CREATE TRIGGER leads_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, partner_id, mid_id, sa_configured, sa_ebt_fcs_number, sa_amex_program, sa_amex_esa_number, sa_ebt_benefit_mode ON leads
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- card_plans: acceptance.
CREATE TRIGGER card_plans_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE ON card_plans
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- lead_card_plans: acceptance.
CREATE TRIGGER lead_card_plans_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE ON lead_card_plans
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- principals: sealed SSNs.
CREATE TRIGGER principals_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, lead_id, ssn_key_id, ssn_sealed ON principals
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- merchants: SAM pages (visibility).
CREATE TRIGGER merchants_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, partner_id ON merchants
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- deployment_orders: SAM pages (visibility).
CREATE TRIGGER deployment_orders_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, merchant_id ON deployment_orders
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- line_items: SAM pages (visibility).
CREATE TRIGGER line_items_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, order_id, equipment_id ON line_items
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- equipment: SAM pages (visibility).
CREATE TRIGGER equipment_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF id ON equipment
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- sam_action_logs: SAM pages.
CREATE TRIGGER sam_action_logs_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE ON sam_action_logs
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();

-- sam_log_buckets: SAM pages (totals, where a page starts).
CREATE TRIGGER sam_log_buckets_cache AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE ON sam_log_buckets
  FOR EACH STATEMENT EXECUTE FUNCTION cache_generation_bump();
