-- PostgreSQL's twin of migrations/sqlite/0001_init.sql: the same tables, columns, keys and indexes,
-- so that the shared SQL means the same on both. Ids are canonical lower-case uuid text; times
-- are microseconds since the Unix epoch (UTC) in BIGINT, so that ordering is numeric and both
-- engines store the same values. Text is COLLATE "C" to compare bytewise like SQLite's BINARY
-- collation: ordering by id (the SAM log tie-break, exports) must not depend on the server's
-- locale. BLOB is BYTEA and the flags are BOOLEAN.

CREATE TABLE partners (
  id   TEXT COLLATE "C" PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL
);

CREATE TABLE users (
  id          TEXT COLLATE "C" PRIMARY KEY,
  partner_id  TEXT COLLATE "C" REFERENCES partners(id),
  email       TEXT COLLATE "C" NOT NULL,
  permissions TEXT COLLATE "C" NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT COLLATE "C" PRIMARY KEY,
  user_id    TEXT COLLATE "C" NOT NULL REFERENCES users(id),
  key_hash   BYTEA NOT NULL UNIQUE,
  expires_at BIGINT
);

CREATE TABLE sessions (
  id         TEXT COLLATE "C" PRIMARY KEY,
  user_id    TEXT COLLATE "C" NOT NULL REFERENCES users(id),
  token_hash BYTEA NOT NULL UNIQUE,
  expires_at BIGINT NOT NULL
);

CREATE TABLE card_plans (
  id           TEXT COLLATE "C" PRIMARY KEY,
  code         TEXT COLLATE "C" NOT NULL,
  display_name TEXT COLLATE "C" NOT NULL,
  sort_order   BIGINT NOT NULL
);

-- sa_configured is NULL when the lead has no stored service acceptance.
CREATE TABLE leads (
  id                  TEXT COLLATE "C" PRIMARY KEY,
  partner_id          TEXT COLLATE "C" NOT NULL REFERENCES partners(id),
  business_name       TEXT COLLATE "C" NOT NULL,
  mid_id              TEXT COLLATE "C",
  sa_configured       BOOLEAN,
  sa_ebt_fcs_number   TEXT COLLATE "C",
  sa_amex_program     TEXT COLLATE "C",
  sa_amex_esa_number  TEXT COLLATE "C",
  sa_ebt_benefit_mode TEXT COLLATE "C"
);
CREATE INDEX leads_partner ON leads(partner_id);

CREATE TABLE lead_card_plans (
  lead_id      TEXT COLLATE "C" NOT NULL REFERENCES leads(id),
  card_plan_id TEXT COLLATE "C" NOT NULL REFERENCES card_plans(id),
  PRIMARY KEY (lead_id, card_plan_id)
);

CREATE TABLE principals (
  id         TEXT COLLATE "C" PRIMARY KEY,
  lead_id    TEXT COLLATE "C" NOT NULL REFERENCES leads(id),
  first_name TEXT COLLATE "C" NOT NULL,
  last_name  TEXT COLLATE "C" NOT NULL,
  ssn_key_id TEXT COLLATE "C",
  ssn_sealed BYTEA
);
CREATE INDEX principals_lead ON principals(lead_id);

CREATE TABLE merchants (
  id         TEXT COLLATE "C" PRIMARY KEY,
  partner_id TEXT COLLATE "C" NOT NULL REFERENCES partners(id),
  lead_id    TEXT COLLATE "C" REFERENCES leads(id),
  name       TEXT COLLATE "C" NOT NULL
);

CREATE TABLE merchant_documents (
  id           TEXT COLLATE "C" PRIMARY KEY,
  merchant_id  TEXT COLLATE "C" NOT NULL REFERENCES merchants(id),
  file_name    TEXT COLLATE "C" NOT NULL,
  content_type TEXT COLLATE "C" NOT NULL,
  content      BYTEA NOT NULL
);
CREATE INDEX merchant_documents_merchant ON merchant_documents(merchant_id);

CREATE TABLE pricing_models (
  id                 TEXT COLLATE "C" PRIMARY KEY,
  merchant_id        TEXT COLLATE "C" NOT NULL REFERENCES merchants(id),
  active             BOOLEAN NOT NULL,
  type               TEXT COLLATE "C" NOT NULL,
  adjustment_percent TEXT COLLATE "C"
);
CREATE UNIQUE INDEX pricing_models_one_active ON pricing_models(merchant_id) WHERE active;

CREATE TABLE deployment_models (
  id             TEXT COLLATE "C" PRIMARY KEY,
  name           TEXT COLLATE "C" NOT NULL,
  equipment_type TEXT COLLATE "C" NOT NULL,
  workflow       TEXT COLLATE "C" NOT NULL
);

CREATE TABLE deployment_orders (
  id          TEXT COLLATE "C" PRIMARY KEY,
  merchant_id TEXT COLLATE "C" NOT NULL REFERENCES merchants(id)
);

CREATE TABLE inventory_units (
  id                  TEXT COLLATE "C" PRIMARY KEY,
  deployment_model_id TEXT COLLATE "C" NOT NULL REFERENCES deployment_models(id),
  serial_number       TEXT COLLATE "C" NOT NULL,
  condition           TEXT COLLATE "C" NOT NULL,
  status              TEXT COLLATE "C" NOT NULL,
  received_date       BIGINT NOT NULL,
  created_at          BIGINT NOT NULL,
  created_by          TEXT COLLATE "C" NOT NULL,
  updated_at          BIGINT NOT NULL,
  updated_by          TEXT COLLATE "C" NOT NULL
);

CREATE TABLE varsheets (
  id                        TEXT COLLATE "C" PRIMARY KEY,
  entity_id                 TEXT COLLATE "C" NOT NULL,
  entity_type               TEXT COLLATE "C" NOT NULL,
  mid_id                    TEXT COLLATE "C" NOT NULL,
  v_number                  TEXT COLLATE "C" NOT NULL,
  terminal_id_number        TEXT COLLATE "C",
  agent                     TEXT COLLATE "C",
  chain                     TEXT COLLATE "C",
  store_number              TEXT COLLATE "C",
  merchant_number           TEXT COLLATE "C",
  currency_code             TEXT COLLATE "C",
  time_zone_code            TEXT COLLATE "C",
  time_zone_differential    TEXT COLLATE "C",
  discover_number           TEXT COLLATE "C",
  amex_opt_blue             BOOLEAN,
  pin_debit                 BOOLEAN,
  ebt_food_stamps           BOOLEAN,
  ebt_cash                  BOOLEAN,
  merchant_location_number  TEXT COLLATE "C",
  merchant_aba_number       TEXT COLLATE "C",
  merchant_settlement_agent TEXT COLLATE "C",
  reimbursement_attribute   TEXT COLLATE "C",
  sharing_group             TEXT COLLATE "C",
  industry                  TEXT COLLATE "C",
  fcs_number                TEXT COLLATE "C",
  created_at                BIGINT NOT NULL,
  created_by                TEXT COLLATE "C" NOT NULL,
  updated_at                BIGINT NOT NULL,
  updated_by                TEXT COLLATE "C" NOT NULL
);

CREATE TABLE equipment (
  id                  TEXT COLLATE "C" PRIMARY KEY,
  entity_id           TEXT COLLATE "C" NOT NULL,
  entity_type         TEXT COLLATE "C" NOT NULL,
  deployment_model_id TEXT COLLATE "C" NOT NULL REFERENCES deployment_models(id),
  inventory_unit_id   TEXT COLLATE "C" REFERENCES inventory_units(id),
  vendor_terminal_id  TEXT COLLATE "C",
  varsheet_id         TEXT COLLATE "C" REFERENCES varsheets(id),
  status              TEXT COLLATE "C" NOT NULL,
  deployed_date       BIGINT,
  created_at          BIGINT NOT NULL,
  created_by          TEXT COLLATE "C" NOT NULL,
  updated_at          BIGINT NOT NULL,
  updated_by          TEXT COLLATE "C" NOT NULL
);

CREATE TABLE line_items (
  id                  TEXT COLLATE "C" PRIMARY KEY,
  order_id            TEXT COLLATE "C" NOT NULL REFERENCES deployment_orders(id),
  order_type          TEXT COLLATE "C" NOT NULL,
  deployment_model_id TEXT COLLATE "C" NOT NULL REFERENCES deployment_models(id),
  connection_type     TEXT COLLATE "C",
  status              TEXT COLLATE "C" NOT NULL,
  inventory_unit_id   TEXT COLLATE "C" REFERENCES inventory_units(id),
  equipment_id        TEXT COLLATE "C" REFERENCES equipment(id),
  varsheet_id         TEXT COLLATE "C" REFERENCES varsheets(id),
  created_at          BIGINT NOT NULL,
  created_by          TEXT COLLATE "C" NOT NULL,
  updated_at          BIGINT NOT NULL,
  updated_by          TEXT COLLATE "C" NOT NULL
);
CREATE INDEX line_items_order ON line_items(order_id);
CREATE INDEX line_items_equipment ON line_items(equipment_id);

CREATE TABLE shipments (
  id              TEXT COLLATE "C" PRIMARY KEY,
  line_item_id    TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES line_items(id),
  status          TEXT COLLATE "C" NOT NULL,
  carrier_code    TEXT COLLATE "C",
  tracking_number TEXT COLLATE "C",
  shipped_date    BIGINT
);

CREATE TABLE file_builds (
  id           TEXT COLLATE "C" PRIMARY KEY,
  line_item_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES line_items(id),
  settings     TEXT COLLATE "C" NOT NULL
);

-- pos is the 1-based rank of a log within its entity in list order (action_date DESC, id DESC),
-- maintained on import, so that any page is an index range scan and the count is max(pos).
CREATE TABLE sam_action_logs (
  id          TEXT COLLATE "C" PRIMARY KEY,
  entity_id   TEXT COLLATE "C" NOT NULL,
  action      TEXT COLLATE "C" NOT NULL,
  action_date BIGINT NOT NULL,
  sam_id      BIGINT NOT NULL,
  pos         BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sam_action_logs_entity_pos ON sam_action_logs(entity_id, pos);

CREATE TABLE merchant_notes (
  id          TEXT COLLATE "C" PRIMARY KEY,
  merchant_id TEXT COLLATE "C" NOT NULL REFERENCES merchants(id),
  body        TEXT COLLATE "C" NOT NULL,
  created_at  BIGINT NOT NULL,
  created_by  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX merchant_notes_merchant ON merchant_notes(merchant_id);

CREATE TABLE audit_events (
  id            TEXT COLLATE "C" PRIMARY KEY,
  at            BIGINT NOT NULL,
  actor_user_id TEXT COLLATE "C" NOT NULL,
  action        TEXT COLLATE "C" NOT NULL,
  target_id     TEXT COLLATE "C" NOT NULL,
  outcome       TEXT COLLATE "C" NOT NULL,
  detail        TEXT COLLATE "C" NOT NULL
);

-- One running push per line item across every process sharing the database.
CREATE TABLE push_leases (
  line_item_id TEXT COLLATE "C" PRIMARY KEY,
  holder       TEXT COLLATE "C" NOT NULL,
  expires_at   BIGINT NOT NULL
);

