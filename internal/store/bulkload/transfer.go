package bulkload

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Moving a whole database into an empty one of either engine (`backoffice copy`): every row of
// every table the migrations create, as stored. Which tables those are comes from the two
// databases' own catalogs, checked against the lists below, so that a table a migration adds is
// copied or refused, never skipped.

// copiedTables are the tables a copy moves, row for row, every column as stored (credential
// hashes, sealed SSNs, audit events with their seq and links, documents' contents, idempotency
// keys, push leases and records): parents before the tables whose foreign keys name them.
var copiedTables = []string{
	"partners", "users", "api_keys", "sessions",
	"card_plans", "leads", "lead_card_plans", "principals",
	"merchants", "merchant_documents", "merchant_notes", "pricing_models",
	"deployment_models", "deployment_orders", "inventory_units", "varsheets", "equipment",
	"line_items", "shipments", "file_builds",
	"sam_action_logs", "sam_action_log_ids", "sam_log_buckets",
	"audit_events", "audit_tree", "audit_prune",
	"push_leases", "push_records", "push_idempotency",
}

// GenesisTable has one row in every migrated database (its migration makes it): a copy replaces
// the target's with the source's, seal and all.
const GenesisTable = "audit_chain_genesis"

// notCopied are the tables a copy leaves as the target's migrations made them, each with why.
var notCopied = map[string]string{
	"schema_migrations":     "each engine's own migrations, applied to the target before the copy",
	"cache_generation":      "the read cache's number, which the copy moves on the target as an import does",
	"cache_generation_owed": "PostgreSQL's moves of the read cache's number owed by transactions still open, none once they end",
	"readiness_probe":       "the row GET /readyz writes and removes in one transaction",
	"audit_chain_lock":      "PostgreSQL's lock row for the audit chain's turn, made by its migration",
}

// CopiedTables are the tables a copy moves, parents first, in a slice of the caller's own.
func CopiedTables() []string { return slices.Clone(copiedTables) }

// NotCopied are the tables a copy leaves as the target's migrations made them, each with why, in a
// map of the caller's own.
func NotCopied() map[string]string { return maps.Clone(notCopied) }

// ErrTargetNotEmpty is a copy refused because the target holds rows.
var ErrTargetNotEmpty = errors.New("the target database is not empty")

// Column is one column of a table as an engine's catalog gives it.
type Column struct {
	Name string
	// Bool: the engine keeps it as a boolean (PostgreSQL; SQLite keeps flags as 0 and 1).
	Bool bool
	// Key is the column's place in the primary key from 1, 0 when it is not in it.
	Key int
}

// Catalog is every table of a database with its columns, in their order.
type Catalog map[string][]Column

// checkCopyable fails unless every table of both catalogs is copied (copiedTables, the genesis) or
// set aside (notCopied), and every copied table has the same columns in both.
func checkCopyable(source, target Catalog) error {
	known := map[string]bool{GenesisTable: true}
	for _, t := range copiedTables {
		known[t] = true
	}
	for t := range notCopied {
		known[t] = true
	}
	for _, side := range []struct {
		name string
		cat  Catalog
	}{{"source", source}, {"target", target}} {
		for _, t := range slices.Sorted(maps.Keys(side.cat)) {
			if !known[t] {
				return fmt.Errorf("the %s database has a table this release does not know how to copy (%s): copy with the release whose migrations made it", side.name, t)
			}
		}
	}
	for _, t := range append(slices.Clone(copiedTables), GenesisTable) {
		s, ok := source[t]
		if !ok {
			return fmt.Errorf("the source database has no table %s: not a backoffice database, or one this release did not migrate", t)
		}
		d, ok := target[t]
		if !ok {
			return fmt.Errorf("the target database has no table %s", t)
		}
		if a, b := columnNames(s), columnNames(d); !slices.Equal(a, b) {
			return fmt.Errorf("table %s has other columns in the source (%s) than in the target (%s)", t, strings.Join(a, ", "), strings.Join(b, ", "))
		}
		for _, c := range s {
			if !plainName.MatchString(c.Name) {
				return fmt.Errorf("table %s has a column named %q, which no migration makes", t, c.Name)
			}
		}
	}
	return nil
}

// plainName is how every column the migrations make is spelled: a copy names columns it read from
// a catalog in its statements, so it takes no other.
var plainName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// columnNames are the columns' names, sorted.
func columnNames(cs []Column) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return names
}
