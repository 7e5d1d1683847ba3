-- The read cache's generation (internal/store/cache.go, docs/architecture.md "The read cache").
-- The cache keeps the answers of the per-request reads (credentials, service acceptance, sealed
-- SSNs, SAM log pages) filed under n, and empties when a request finds n moved. The triggers below
-- move n in the same transaction as any change to what those reads read, whoever makes it: this
-- service, a CLI command, another replica, the sqlite3 shell. They fire on INSERT and DELETE and
-- on an UPDATE of the columns a cached read reads, and on nothing else: not on a key's last use
-- (stamped as keys are used), not on the audit trail, which no cached read reads, so decrypts'
-- audit commits leave the cache valid. TestTriggersCoverWhatCachedReadsRead
-- (internal/store/cachecover_test.go) fails while a column a cached read reads lacks its trigger.
--
-- n is set to a new random number, not counted up: a database restored from a copy (whose n a
-- counter could have reached again since, along another history) never shows a number the cache
-- filed answers under for other data. SQLite has row triggers only: each row changed sets n. An import
-- sets these triggers aside inside its own transaction and moves n once before it commits
-- (sqlite.BeginImport): no other connection sees the tables without them.
CREATE TABLE cache_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n  INTEGER NOT NULL
);
INSERT INTO cache_generation (id, n) VALUES (1, 0);


-- users: the credential lookup.
CREATE TRIGGER users_cache_insert AFTER INSERT ON users BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER users_cache_update AFTER UPDATE OF id, partner_id, permissions ON users BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER users_cache_delete AFTER DELETE ON users BEGIN UPDATE cache_generation SET n = random(); END;

-- api_keys: the credential lookup; not last_used_at, stamped on use.
CREATE TRIGGER api_keys_cache_insert AFTER INSERT ON api_keys BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER api_keys_cache_update AFTER UPDATE OF id, user_id, key_hash, expires_at, revoked_at ON api_keys BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER api_keys_cache_delete AFTER DELETE ON api_keys BEGIN UPDATE cache_generation SET n = random(); END;

-- sessions: the credential lookup.
CREATE TRIGGER sessions_cache_insert AFTER INSERT ON sessions BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER sessions_cache_update AFTER UPDATE OF id, user_id, token_hash, expires_at, revoked_at ON sessions BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER sessions_cache_delete AFTER DELETE ON sessions BEGIN UPDATE cache_generation SET n = random(); END;

-- leads: acceptance, sealed SSNs (the owner), SAM pages (visibility).
CREATE TRIGGER leads_cache_insert AFTER INSERT ON leads BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER leads_cache_update AFTER UPDATE OF id, partner_id, mid_id, sa_configured, sa_ebt_fcs_number, sa_amex_program, sa_amex_esa_number, sa_ebt_benefit_mode ON leads BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER leads_cache_delete AFTER DELETE ON leads BEGIN UPDATE cache_generation SET n = random(); END;

-- card_plans: acceptance.
CREATE TRIGGER card_plans_cache_insert AFTER INSERT ON card_plans BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER card_plans_cache_update AFTER UPDATE ON card_plans BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER card_plans_cache_delete AFTER DELETE ON card_plans BEGIN UPDATE cache_generation SET n = random(); END;

-- lead_card_plans: acceptance.
CREATE TRIGGER lead_card_plans_cache_insert AFTER INSERT ON lead_card_plans BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER lead_card_plans_cache_update AFTER UPDATE ON lead_card_plans BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER lead_card_plans_cache_delete AFTER DELETE ON lead_card_plans BEGIN UPDATE cache_generation SET n = random(); END;

-- principals: sealed SSNs.
CREATE TRIGGER principals_cache_insert AFTER INSERT ON principals BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER principals_cache_update AFTER UPDATE OF id, lead_id, ssn_key_id, ssn_sealed ON principals BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER principals_cache_delete AFTER DELETE ON principals BEGIN UPDATE cache_generation SET n = random(); END;

-- merchants: SAM pages (visibility).
CREATE TRIGGER merchants_cache_insert AFTER INSERT ON merchants BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER merchants_cache_update AFTER UPDATE OF id, partner_id ON merchants BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER merchants_cache_delete AFTER DELETE ON merchants BEGIN UPDATE cache_generation SET n = random(); END;

-- deployment_orders: SAM pages (visibility).
CREATE TRIGGER deployment_orders_cache_insert AFTER INSERT ON deployment_orders BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER deployment_orders_cache_update AFTER UPDATE OF id, merchant_id ON deployment_orders BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER deployment_orders_cache_delete AFTER DELETE ON deployment_orders BEGIN UPDATE cache_generation SET n = random(); END;

-- line_items: SAM pages (visibility).
CREATE TRIGGER line_items_cache_insert AFTER INSERT ON line_items BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER line_items_cache_update AFTER UPDATE OF id, order_id, equipment_id ON line_items BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER line_items_cache_delete AFTER DELETE ON line_items BEGIN UPDATE cache_generation SET n = random(); END;

-- equipment: SAM pages (visibility).
CREATE TRIGGER equipment_cache_insert AFTER INSERT ON equipment BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER equipment_cache_update AFTER UPDATE OF id ON equipment BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER equipment_cache_delete AFTER DELETE ON equipment BEGIN UPDATE cache_generation SET n = random(); END;

-- sam_action_logs: SAM pages.
CREATE TRIGGER sam_action_logs_cache_insert AFTER INSERT ON sam_action_logs BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER sam_action_logs_cache_update AFTER UPDATE ON sam_action_logs BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER sam_action_logs_cache_delete AFTER DELETE ON sam_action_logs BEGIN UPDATE cache_generation SET n = random(); END;

-- sam_log_buckets: SAM pages (totals, where a page starts).
CREATE TRIGGER sam_log_buckets_cache_insert AFTER INSERT ON sam_log_buckets BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER sam_log_buckets_cache_update AFTER UPDATE ON sam_log_buckets BEGIN UPDATE cache_generation SET n = random(); END;
CREATE TRIGGER sam_log_buckets_cache_delete AFTER DELETE ON sam_log_buckets BEGIN UPDATE cache_generation SET n = random(); END;
