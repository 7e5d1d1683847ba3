-- The audit trail's prunes (`backoffice audit prune`, docs/compliance.md "Retention"): each row
-- is a signed note (checkpoint.Prune) saying the events below seq `below` were archived and
-- removed by the retention policy, with the chain's link, digest and the tree's root where the
-- kept events carry on. A walk of the trail starts from the newest row, whose note must hold
-- under a key of the ring: a row nobody with the key signed is a break, not a prune. The tree's
-- rows are never pruned.
CREATE TABLE audit_prune (
  below BIGINT PRIMARY KEY,
  note  TEXT NOT NULL
);
