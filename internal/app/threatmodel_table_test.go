package app

import (
	"cmp"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"backoffice/internal/testdb"
)

// The golden file: one line per engine and case, its cells tab-separated.

// checkThreatGolden compares the outcomes with the golden file (the pooler's with PostgreSQL's:
// it changes no outcome), or, with -update-threat-model, writes it and the table in
// docs/compliance.md.
func checkThreatGolden(t *testing.T, got map[string]map[string][]string) {
	t.Helper()
	if pg, pb := got["postgres"], got["pgbouncer"]; pg != nil && pb != nil {
		for key, cells := range pb {
			if !slices.Equal(cells, pg[key]) {
				t.Errorf("%s: through the pooler %q, directly %q", key, cells, pg[key])
			}
		}
	}
	if *updateThreatModel {
		if got["sqlite"] == nil || got["postgres"] == nil {
			t.Fatal("-update-threat-model needs both engines: set " + testdb.PostgresURLVar)
		}
		var b strings.Builder
		for _, engine := range []string{"sqlite", "postgres"} {
			keys := make([]string, 0, len(got[engine]))
			for k := range got[engine] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "%s\t%s\t%s\n", engine, k, strings.Join(got[engine][k], "\t"))
			}
		}
		if err := os.WriteFile(threatGolden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		writeThreatTable(t)
		return
	}
	want := readThreatGolden(t)
	for _, engine := range []string{"sqlite", "postgres"} {
		if got[engine] == nil {
			continue
		}
		for key, cells := range want[engine] {
			if g, ok := got[engine][key]; !ok {
				t.Errorf("%s: %s: in %s, not made by this run", engine, key, threatGolden)
			} else if !slices.Equal(g, cells) {
				t.Errorf("%s: %s:\n got  %q\n want %q", engine, key, g, cells)
			}
		}
		for key := range got[engine] {
			if _, ok := want[engine][key]; !ok {
				t.Errorf("%s: %s: a change not in %s: run with -update-threat-model and read the table", engine, key, threatGolden)
			}
		}
	}
}

func readThreatGolden(t *testing.T) map[string]map[string][]string {
	t.Helper()
	b, err := os.ReadFile(threatGolden)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) < 3 {
			t.Fatalf("%s: %q", threatGolden, line)
		}
		if out[f[0]] == nil {
			out[f[0]] = map[string][]string{}
		}
		out[f[0]][f[1]] = f[2:]
	}
	return out
}

const (
	threatDoc        = "../../docs/compliance.md"
	threatTableStart = "<!-- The table below is written by TestDatabaseAttackerTable (internal/app) from testdata/threat-model.golden: do not edit it by hand. -->"
	threatTableEnd   = "<!-- End of the table TestDatabaseAttackerTable writes. -->"
)

// threatTable renders the golden file as the Markdown docs/compliance.md shows: a table per row
// the changes aim at, a line per change, the engines' outcomes merged where they agree.
func threatTable(t *testing.T) string {
	t.Helper()
	g := readThreatGolden(t)
	type line struct {
		table, column, kind string
		target              int64
		key                 string
	}
	var lines []line
	seen := map[string]bool{}
	for _, engine := range []string{"sqlite", "postgres"} {
		for k := range g[engine] {
			if seen[k] {
				continue
			}
			seen[k] = true
			m := keyRe.FindStringSubmatch(k)
			if m == nil {
				t.Fatalf("%s: %q is no change", threatGolden, k)
			}
			var target int64
			fmt.Sscan(m[4], &target)
			lines = append(lines, line{table: m[1], column: m[2], target: target, kind: m[5], key: k})
		}
	}
	kinds := []string{"new value", "NULL", "unknown key id", "copied from another row"}
	rank := func(l line) int {
		if i := slices.Index(kinds, l.kind); i >= 0 {
			return i
		}
		return len(kinds)
	}
	slices.SortFunc(lines, func(a, b line) int {
		return cmp.Or(cmp.Compare(a.table, b.table), cmp.Compare(a.target, b.target), cmp.Compare(rowOp(a.column), rowOp(b.column)),
			cmp.Compare(a.column, b.column), cmp.Compare(rank(a), rank(b)), cmp.Compare(a.kind, b.kind))
	})
	what := map[int64]string{}
	for _, x := range attackTargets {
		what[x.seq] = x.what
	}
	var b strings.Builder
	for i, l := range lines {
		if i == 0 || l.table != lines[i-1].table || l.target != lines[i-1].target {
			heading := fmt.Sprintf("`%s`, row %d", l.table, l.target)
			if l.table == "audit_events" {
				heading = fmt.Sprintf("`audit_events`, seq %d: %s", l.target, what[l.target])
			}
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "**%s**\n\n", heading)
			b.WriteString("| Change | Database | serve's next checkpoint | keys rewrap | verify, checkpoints file | verify, database alone | verify, logged checkpoints |\n")
			b.WriteString("|---|---|---|---|---|---|---|\n")
		}
		change := "row: " + l.kind
		if l.column != "" {
			change = "`" + l.column + "`: " + l.kind
		}
		sq, pg := g["sqlite"][l.key], g["postgres"][l.key]
		cells := make([]string, 6)
		for i := range cells {
			var a, p string
			if i < len(sq) {
				a = sq[i]
			}
			if i < len(pg) {
				p = pg[i]
			}
			switch {
			case sq == nil && i == 0:
				cells[i] = "PostgreSQL only: " + p
			case sq == nil:
				cells[i] = p
			case pg == nil || a == p:
				cells[i] = a
			default:
				cells[i] = "SQLite: " + orDash(a) + "; PostgreSQL: " + orDash(p)
			}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", change, strings.Join(cells, " | "))
	}
	return b.String()
}

// rowOp orders a row operation (no column) after the column changes.
func rowOp(column string) int {
	if column == "" {
		return 1
	}
	return 0
}

var keyRe = regexp.MustCompile(`^([a-z_]+)(?:\.([a-z_]+))? · (seq|row) (\d+) · (.+)$`)

func writeThreatTable(t *testing.T) {
	t.Helper()
	doc := readFile(t, threatDoc)
	start, end := strings.Index(doc, threatTableStart), strings.Index(doc, threatTableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no place for the table (%q … %q)", threatDoc, threatTableStart, threatTableEnd)
	}
	doc = doc[:start+len(threatTableStart)] + "\n\n" + threatTable(t) + "\n" + doc[end:]
	if err := os.WriteFile(threatDoc, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The table in docs/compliance.md is the golden file's: what the test last found.
func TestThreatModelTableIsTheTests(t *testing.T) {
	doc := readFile(t, threatDoc)
	start, end := strings.Index(doc, threatTableStart), strings.Index(doc, threatTableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no place for the table", threatDoc)
	}
	if got, want := strings.TrimSpace(doc[start+len(threatTableStart):end]), strings.TrimSpace(threatTable(t)); got != want {
		t.Errorf("the table in %s is not the one %s makes: run TestDatabaseAttackerTable with -update-threat-model", threatDoc, threatGolden)
	}
}
