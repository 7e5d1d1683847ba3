package auditlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"backoffice/internal/domain"
	"backoffice/internal/sqltx"
)

// The audit trail's catalog: the tables the trail relies on (every table whose name begins with
// audit: the events, the genesis, PostgreSQL's chain lock) and what the database attaches to them
// (triggers; on PostgreSQL also rules, row-level security and its policies, and the writer's
// functions). Someone with only database access who adds a trigger that drops each new event
// (SQLite's RAISE(IGNORE), PostgreSQL's RETURN NULL), a rule, a policy, or a view renamed into a
// table's place, would have events vanish as they are written while the trail still verifies. So
// the trail's catalog must be exactly what the migrations make: CheckTrailCatalog compares it with
// the engine's expectation, which is built into the binary (Engine.TrailCatalog, a file
// TestTrailCatalogIsTheMigrations writes from a freshly migrated database of each engine and fails
// on while it differs), never read from the database an attacker could rewrite it in. Anything
// else holds the trail: the chain links no event (every request that records one answers 503), and
// nothing is signed, until the process is restarted on a catalog that is the migrations' again.

// TrailCatalogError is a trail whose catalog is not what the migrations make: each finding names
// an object found, changed or missing. It answers as unavailable, with a detail that names none of
// them (they go to the log).
type TrailCatalogError struct {
	Findings []string
}

func (e *TrailCatalogError) Error() string {
	return "the audit trail's tables are not what the migrations made: " + strings.Join(e.Findings, "; ")
}

// Unwrap is the error the API answers with: 503 unavailable, its detail naming nothing found, its
// cause (for the log's line of each refused request) the findings.
func (e *TrailCatalogError) Unwrap() error {
	return &domain.Error{Kind: domain.KindUnavailable, Code: "unavailable",
		Detail: "the audit trail cannot record events now, so no request that records one is served; an operator must act (the service's log says why)",
		Err:    errors.New(e.Error())}
}

// CheckTrailCatalog compares the audit trail's catalog with what the migrations make and returns
// a *TrailCatalogError naming each difference, or nil. A difference holds the trail from then on
// (TrailCatalogHeld): it stays held, and is returned again, even once the catalog is put back,
// because events written while it differed may be gone without a trace; a restart checks afresh.
// An error reading the catalog holds nothing (the database may be away: try again).
func (s *Log) CheckTrailCatalog(ctx context.Context) error {
	if held := s.trailHeld.Load(); held != nil {
		return held
	}
	query, expected := s.engine.TrailCatalog()
	g := s.trailGuard()
	before, err := g.fingerprint(ctx, s.db)
	if err != nil {
		return err
	}
	got, err := s.trailCatalog(ctx, query)
	if err != nil {
		return err
	}
	findings := compareTrailCatalog(catalogLines(expected), got)
	if len(findings) == 0 {
		return g.remember(ctx, s.db, before) // what each append compares (trailguard.go)
	}
	return holdTrail(&s.trailHeld, findings)
}

// holdTrail holds the trail on findings in held (a log's), unless it is held already, and returns
// the held error.
func holdTrail(held *atomic.Pointer[TrailCatalogError], findings []string) error {
	held.CompareAndSwap(nil, &TrailCatalogError{Findings: findings})
	return held.Load()
}

// TrailCatalogHeld is the difference CheckTrailCatalog found, or nil while it found none.
func (s *Log) TrailCatalogHeld() error {
	if held := s.trailHeld.Load(); held != nil {
		return held
	}
	return nil
}

// trailCatalog reads the trail's catalog with the engine's query, one line per object: its kind,
// name, the table it is on, and the SHA-256 of its definition (empty where it has none), tab
// separated, in order.
func (s *Log) trailCatalog(ctx context.Context, query string) ([]string, error) {
	rows, err := s.db.Query(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: the audit trail's catalog: %w", err)
	}
	return catalogRows(rows)
}

// catalogRows reads the rows of the catalog query as trailCatalog gives them, and closes them.
func catalogRows(rows *sqltx.Rows) ([]string, error) {
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var kind, name, on, def string
		if err := rows.Scan(&kind, &name, &on, &def); err != nil {
			return nil, fmt.Errorf("store: the audit trail's catalog: %w", err)
		}
		if def != "" {
			sum := sha256.Sum256([]byte(def))
			def = hex.EncodeToString(sum[:])
		}
		lines = append(lines, strings.Join([]string{kind, name, on, def}, "\t"))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: the audit trail's catalog: %w", err)
	}
	slices.Sort(lines)
	return lines, nil
}

// catalogObject is one line of the trail's catalog.
type catalogObject struct{ kind, name, on, def string }

func parseCatalogLine(line string) catalogObject {
	f := strings.SplitN(line, "\t", 4)
	for len(f) < 4 {
		f = append(f, "")
	}
	return catalogObject{kind: f[0], name: f[1], on: f[2], def: f[3]}
}

// isRelation tells a table, a view or another kind of relation from what is attached to one.
func (o catalogObject) isRelation() bool {
	return o.on == "" && o.kind != "function" && !strings.HasSuffix(o.kind, "row level security")
}

// String names the object as the log says it: "trigger zz on audit_events", "view audit_events",
// "forced row level security on audit_events".
func (o catalogObject) String() string {
	switch {
	case o.on != "":
		return o.kind + " " + o.name + " on " + o.on
	case strings.HasSuffix(o.kind, "row level security"):
		return o.kind + " on " + o.name
	}
	return o.kind + " " + o.name
}

// compareTrailCatalog names each difference between the catalog the migrations make (want) and
// the one found (got): an object found that they do not make, one whose definition differs, one
// missing, and a relation of another kind in a table's place.
func compareTrailCatalog(want, got []string) []string {
	wanted := map[string]catalogObject{}    // kind, name, on → object
	relations := map[string]catalogObject{} // name → the relation the migrations make
	for _, line := range want {
		if line == "" {
			continue
		}
		o := parseCatalogLine(line)
		wanted[o.kind+"\t"+o.name+"\t"+o.on] = o
		if o.isRelation() {
			relations[o.name] = o
		}
	}
	var findings []string
	seen := map[string]bool{}
	for _, line := range got {
		o := parseCatalogLine(line)
		key := o.kind + "\t" + o.name + "\t" + o.on
		seen[key] = true
		w, ok := wanted[key]
		switch {
		case ok && w.def == o.def:
		case ok:
			findings = append(findings, "changed: "+o.String())
		case o.isRelation() && relations[o.name].kind != "":
			r := relations[o.name]
			seen[r.kind+"\t"+r.name+"\t"+r.on] = true
			findings = append(findings, fmt.Sprintf("%s is a %s, not a %s", o.name, o.kind, r.kind))
		default:
			findings = append(findings, "found: "+o.String())
		}
	}
	for key, w := range wanted {
		if !seen[key] {
			findings = append(findings, "missing: "+w.String())
		}
	}
	slices.Sort(findings)
	return findings
}
