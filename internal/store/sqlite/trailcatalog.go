package sqlite

import _ "embed"

// trailCatalog is what the migrations make of the audit trail's catalog (TrailCatalog), written
// by TestTrailCatalogIsTheMigrations (internal/auditlog) with -update-trail-catalog.
//
//go:embed trail-catalog.golden
var trailCatalog []byte

// trailCatalogQuery reads the catalog objects the audit trail relies on: every table or view
// whose name begins with audit (the trail's tables), and every trigger on one of them. Indexes are
// left out: an index cannot drop, hide or change a row, and an operator may add one.
const trailCatalogQuery = `SELECT type, name, CASE WHEN type = 'trigger' THEN tbl_name ELSE '' END,
       CASE WHEN type = 'trigger' THEN coalesce(sql, '') ELSE '' END
FROM sqlite_schema
WHERE type IN ('table', 'view') AND name LIKE 'audit%'
   OR type = 'trigger' AND tbl_name LIKE 'audit%'
ORDER BY type, name`

// TrailCatalog is the query that reads the audit trail's catalog, each row an object's kind,
// name, the table it is on ("" for a table or view) and its definition ("" where its kind says
// all), and what the migrations make of it.
func (Engine) TrailCatalog() (query string, expected []byte) { return trailCatalogQuery, trailCatalog }
