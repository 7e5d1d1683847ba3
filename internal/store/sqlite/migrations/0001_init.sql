-- Ids are canonical lower-case uuid text; times are microseconds since the Unix epoch (UTC), so
-- that ordering is numeric and both engines store the same values.

CREATE TABLE partners (
  id   TEXT PRIMARY KEY,
  name TEXT NOT NULL
);

CREATE TABLE users (
  id          TEXT PRIMARY KEY,
  partner_id  TEXT REFERENCES partners(id),
  email       TEXT NOT NULL,
  permissions TEXT NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id),
  key_hash   BLOB NOT NULL UNIQUE,
  expires_at INTEGER
);

CREATE TABLE sessions (
  id         TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id),
  token_hash BLOB NOT NULL UNIQUE,
  expires_at INTEGER NOT NULL
);

CREATE TABLE card_plans (
  id           TEXT PRIMARY KEY,
  code         TEXT NOT NULL,
  display_name TEXT NOT NULL,
  sort_order   INTEGER NOT NULL
);

-- sa_configured is NULL when the lead has no stored service acceptance.
CREATE TABLE leads (
  id                  TEXT PRIMARY KEY,
  partner_id          TEXT NOT NULL REFERENCES partners(id),
  business_name       TEXT NOT NULL,
  mid_id              TEXT,
  sa_configured       INTEGER,
  sa_ebt_fcs_number   TEXT,
  sa_amex_program     TEXT,
  sa_amex_esa_number  TEXT,
  sa_ebt_benefit_mode TEXT
);
CREATE INDEX leads_partner ON leads(partner_id);

CREATE TABLE lead_card_plans (
  lead_id      TEXT NOT NULL REFERENCES leads(id),
  card_plan_id TEXT NOT NULL REFERENCES card_plans(id),
  PRIMARY KEY (lead_id, card_plan_id)
);

CREATE TABLE principals (
  id         TEXT PRIMARY KEY,
  lead_id    TEXT NOT NULL REFERENCES leads(id),
  first_name TEXT NOT NULL,
  last_name  TEXT NOT NULL,
  ssn_key_id TEXT,
  ssn_sealed BLOB
);
CREATE INDEX principals_lead ON principals(lead_id);

CREATE TABLE merchants (
  id         TEXT PRIMARY KEY,
  partner_id TEXT NOT NULL REFERENCES partners(id),
  lead_id    TEXT REFERENCES leads(id),
  name       TEXT NOT NULL
);

CREATE TABLE merchant_documents (
  id           TEXT PRIMARY KEY,
  merchant_id  TEXT NOT NULL REFERENCES merchants(id),
  file_name    TEXT NOT NULL,
  content_type TEXT NOT NULL,
  content      BLOB NOT NULL
);
CREATE INDEX merchant_documents_merchant ON merchant_documents(merchant_id);

CREATE TABLE pricing_models (
  id                 TEXT PRIMARY KEY,
  merchant_id        TEXT NOT NULL REFERENCES merchants(id),
  active             INTEGER NOT NULL,
  type               TEXT NOT NULL,
  adjustment_percent TEXT
);
CREATE UNIQUE INDEX pricing_models_one_active ON pricing_models(merchant_id) WHERE active = 1;

CREATE TABLE deployment_models (
  id             TEXT PRIMARY KEY,
  name           TEXT NOT NULL,
  equipment_type TEXT NOT NULL,
  workflow       TEXT NOT NULL
);

CREATE TABLE deployment_orders (
  id          TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id)
);

CREATE TABLE inventory_units (
  id                  TEXT PRIMARY KEY,
  deployment_model_id TEXT NOT NULL REFERENCES deployment_models(id),
  serial_number       TEXT NOT NULL,
  condition           TEXT NOT NULL,
  status              TEXT NOT NULL,
  received_date       INTEGER NOT NULL,
  created_at          INTEGER NOT NULL,
  created_by          TEXT NOT NULL,
  updated_at          INTEGER NOT NULL,
  updated_by          TEXT NOT NULL
);

CREATE TABLE varsheets (
  id                        TEXT PRIMARY KEY,
  entity_id                 TEXT NOT NULL,
  entity_type               TEXT NOT NULL,
  mid_id                    TEXT NOT NULL,
  v_number                  TEXT NOT NULL,
  terminal_id_number        TEXT,
  agent                     TEXT,
  chain                     TEXT,
  store_number              TEXT,
  merchant_number           TEXT,
  currency_code             TEXT,
  time_zone_code            TEXT,
  time_zone_differential    TEXT,
  discover_number           TEXT,
  amex_opt_blue             INTEGER,
  pin_debit                 INTEGER,
  ebt_food_stamps           INTEGER,
  ebt_cash                  INTEGER,
  merchant_location_number  TEXT,
  merchant_aba_number       TEXT,
  merchant_settlement_agent TEXT,
  reimbursement_attribute   TEXT,
  sharing_group             TEXT,
  industry                  TEXT,
  fcs_number                TEXT,
  created_at                INTEGER NOT NULL,
  created_by                TEXT NOT NULL,
  updated_at                INTEGER NOT NULL,
  updated_by                TEXT NOT NULL
);

CREATE TABLE equipment (
  id                  TEXT PRIMARY KEY,
  entity_id           TEXT NOT NULL,
  entity_type         TEXT NOT NULL,
  deployment_model_id TEXT NOT NULL REFERENCES deployment_models(id),
  inventory_unit_id   TEXT REFERENCES inventory_units(id),
  vendor_terminal_id  TEXT,
  varsheet_id         TEXT REFERENCES varsheets(id),
  status              TEXT NOT NULL,
  deployed_date       INTEGER,
  created_at          INTEGER NOT NULL,
  created_by          TEXT NOT NULL,
  updated_at          INTEGER NOT NULL,
  updated_by          TEXT NOT NULL
);

CREATE TABLE line_items (
  id                  TEXT PRIMARY KEY,
  order_id            TEXT NOT NULL REFERENCES deployment_orders(id),
  order_type          TEXT NOT NULL,
  deployment_model_id TEXT NOT NULL REFERENCES deployment_models(id),
  connection_type     TEXT,
  status              TEXT NOT NULL,
  inventory_unit_id   TEXT REFERENCES inventory_units(id),
  equipment_id        TEXT REFERENCES equipment(id),
  varsheet_id         TEXT REFERENCES varsheets(id),
  created_at          INTEGER NOT NULL,
  created_by          TEXT NOT NULL,
  updated_at          INTEGER NOT NULL,
  updated_by          TEXT NOT NULL
);
CREATE INDEX line_items_order ON line_items(order_id);
CREATE INDEX line_items_equipment ON line_items(equipment_id);

CREATE TABLE shipments (
  id              TEXT PRIMARY KEY,
  line_item_id    TEXT NOT NULL UNIQUE REFERENCES line_items(id),
  status          TEXT NOT NULL,
  carrier_code    TEXT,
  tracking_number TEXT,
  shipped_date    INTEGER
);

CREATE TABLE file_builds (
  id           TEXT PRIMARY KEY,
  line_item_id TEXT NOT NULL UNIQUE REFERENCES line_items(id),
  settings     TEXT NOT NULL
);

-- pos is the 1-based rank of a log within its entity in list order (action_date DESC, id DESC),
-- maintained on import, so that any page is an index range scan and the count is max(pos).
CREATE TABLE sam_action_logs (
  id          TEXT PRIMARY KEY,
  entity_id   TEXT NOT NULL,
  action      TEXT NOT NULL,
  action_date INTEGER NOT NULL,
  sam_id      INTEGER NOT NULL,
  pos         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sam_action_logs_entity_pos ON sam_action_logs(entity_id, pos);

CREATE TABLE merchant_notes (
  id          TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  body        TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  created_by  TEXT NOT NULL
);
CREATE INDEX merchant_notes_merchant ON merchant_notes(merchant_id);

CREATE TABLE audit_events (
  id            TEXT PRIMARY KEY,
  at            INTEGER NOT NULL,
  actor_user_id TEXT NOT NULL,
  action        TEXT NOT NULL,
  target_id     TEXT NOT NULL,
  outcome       TEXT NOT NULL,
  detail        TEXT NOT NULL
);

-- One running push per line item across every process sharing the database.
CREATE TABLE push_leases (
  line_item_id TEXT PRIMARY KEY,
  holder       TEXT NOT NULL,
  expires_at   INTEGER NOT NULL
);
