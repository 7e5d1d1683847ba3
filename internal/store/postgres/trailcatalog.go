package postgres

import _ "embed"

// trailCatalog is what the migrations make of the audit trail's catalog (TrailCatalog), written
// by TestTrailCatalogIsTheMigrations (internal/auditlog) with -update-trail-catalog.
//
//go:embed trail-catalog.golden
var trailCatalog []byte

// trailCatalogQuery reads the catalog objects the audit trail relies on, as the service's own
// statements resolve their names (through the search path): every relation whose name begins with
// audit (the trail's tables) with its kind and whether row-level security is on or forced, the
// triggers (but those a constraint makes), rules, policies and child tables (whose rows a read of
// the table reads too: a trigger may move a row there and the read-back still find it) of each, and every function whose
// name begins with audit (the writer's audit_chain_head and audit_chain_append) with what decides
// what it does: its body, language, arguments, result, volatility, SECURITY DEFINER and settings
// (a search_path among them). Indexes are left out: an index cannot drop, hide or change a row, and
// an operator may add one.
const trailCatalogQuery = `WITH t AS (
  SELECT c.oid, c.relname, c.relkind, c.relrowsecurity, c.relforcerowsecurity
  FROM pg_class c
  WHERE c.relname LIKE 'audit%' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND pg_table_is_visible(c.oid)
)
SELECT CASE relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view'
         WHEN 'm' THEN 'materialized view' ELSE 'foreign table' END, relname::text, ''::text, ''::text
FROM t
UNION ALL
SELECT 'row level security', relname, '', '' FROM t WHERE relrowsecurity
UNION ALL
SELECT 'forced row level security', relname, '', '' FROM t WHERE relforcerowsecurity
UNION ALL
SELECT 'trigger', g.tgname, t.relname, pg_get_triggerdef(g.oid) || ' ' || g.tgenabled::text
FROM pg_trigger g JOIN t ON g.tgrelid = t.oid WHERE NOT g.tgisinternal
UNION ALL
SELECT 'child table', c.relname::text, t.relname, '' FROM pg_inherits i JOIN t ON i.inhparent = t.oid JOIN pg_class c ON c.oid = i.inhrelid
UNION ALL
SELECT 'rule', r.rulename, t.relname, pg_get_ruledef(r.oid) FROM pg_rewrite r JOIN t ON r.ev_class = t.oid
UNION ALL
SELECT 'policy', p.polname, t.relname,
       concat_ws(' ', p.polcmd::text, p.polpermissive::text, p.polroles::text, pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
FROM pg_policy p JOIN t ON p.polrelid = t.oid
UNION ALL
SELECT 'function', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', '',
       concat_ws(E'\n', l.lanname, p.provolatile::text, p.prosecdef::text, coalesce(p.proconfig::text, ''), pg_get_function_result(p.oid), p.prosrc)
FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
WHERE p.proname LIKE 'audit%' AND pg_function_is_visible(p.oid)
ORDER BY 1, 2, 3`

// TrailCatalog is the query that reads the audit trail's catalog, each row an object's kind,
// name, the table it is on ("" for a relation or a function) and its definition ("" where its
// kind says all), and what the migrations make of it.
func (*Engine) TrailCatalog() (query string, expected []byte) { return trailCatalogQuery, trailCatalog }
