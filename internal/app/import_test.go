package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// import --upsert replaces and deletes; the command ends with one summary line, and with standard
// error not a terminal it prints nothing else.
func TestImportUpsertCommand(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			e := newTestEnv(t)
			e.vars["BACKOFFICE_DATABASE_URL"] = testdb.URL(t, engine)
			importUpsertCommand(t, e)
		})
	}
}

func importUpsertCommand(t *testing.T, e *testEnv) {
	demo := importableDemo(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
	out, errOut, err := e.run("import", e.writeDataset("demo.json", demo))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^imported \d+ records from \S+demo.json: \d+ added, 0 replaced, 0 deleted, in \S+\n$`).MatchString(out) || errOut != "" {
		t.Errorf("plain import printed %q and %q on standard error", out, errOut)
	}

	partner := demo.Partners[0]
	partner.Name = "Demo ISO, renamed"
	sync := &dataset.Dataset{Partners: []domain.Partner{partner},
		Deletes: map[string][]domain.ID{"merchantDocuments": {demo.MerchantDocuments[0].ID}}}
	file := e.writeDataset("sync.json", sync)

	_, _, err = e.run("import", file)
	if err == nil || !strings.Contains(err.Error(), "deletes: deleting records needs import --upsert (nothing was imported)") {
		t.Errorf("plain import of a deletes key: %v", err)
	}
	out, errOut, err = e.run("import", "--upsert", file)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^imported 1 records from \S+sync.json: 0 added, 1 replaced, 1 deleted, in \d\S*s\n$`).MatchString(out) || errOut != "" {
		t.Errorf("upsert printed %q and %q on standard error", out, errOut)
	}
	got := e.export()
	if got.Partners[0].Name != partner.Name || len(got.MerchantDocuments) != len(demo.MerchantDocuments)-1 {
		t.Errorf("after the upsert: partner %q, %d documents", got.Partners[0].Name, len(got.MerchantDocuments))
	}
}

// Progress is drawn only on a terminal: a file or a pipe is not one.
func TestProgressOnlyOnATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, out := range []*os.File{f, w} {
		if isTerminal(out) {
			t.Errorf("%s taken for a terminal", out.Name())
		}
		if p := startProgress(out); p.stop != nil {
			t.Errorf("progress drawn on %s", out.Name())
		}
	}
}

// The progress line says what is done of how much, the rate and the time left.
func TestProgressLine(t *testing.T) {
	p := &importProgress{}
	p.setPhase("MB read", 200<<20, 1<<20, "checking the file")
	p.set(50 << 20)
	if got, want := p.line(p.phaseStart.Add(2*time.Second)), "import: 50 of 200 MB read, 25/s, 6s left"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	p.set(200 << 20) // all read: what follows has no count
	if got, want := p.line(p.phaseStart.Add(5*time.Second)), "import: 200 MB read, checking the file, 5s"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	p.setPhase("records", 0, 1, "committing") // total unknown: no time left
	p.set(3000)
	if got, want := p.line(p.phaseStart.Add(time.Second)), "import: 3000 records, 3000/s"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
}

func TestImportSummary(t *testing.T) {
	got := importSummary("sync.json", dataset.Counts{Added: 2, Replaced: 3, Deleted: 1}, 1234567*time.Microsecond)
	if want := "imported 5 records from sync.json: 2 added, 3 replaced, 1 deleted, in 1.235s\n"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}

// A bad SAM log deep in a file (past the first of the chunks the import streams) is named, the
// command fails, and the database keeps nothing of the file: a log the first reading refuses, and
// one only the import can refuse (its entity is nowhere).
func TestImportNamesABadLogDeepInTheFile(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			e := newTestEnv(t)
			e.vars["BACKOFFICE_DATABASE_URL"] = testdb.URL(t, engine)
			base := testdb.SAMBase()
			ds := *base
			ds.SAMActionLogs = testdb.SAMLogs(base.Leads[0].ID, 0, 60_000)
			ds.SAMActionLogs[55_555].EntityID = testdb.SAMID(777)
			_, _, err := e.run("import", e.writeDataset("unknown.json", &ds))
			if err == nil || !strings.Contains(err.Error(), "samActionLogs[55555].entityId: no lead, merchant, deployment order, line item or equipment with this id (line 388912, column 19) (nothing was imported)") {
				t.Errorf("unknown entity: %v", err)
			}
			ds.SAMActionLogs[55_555].EntityID = "not-a-uuid"
			_, _, err = e.run("import", e.writeDataset("bad.json", &ds))
			if err == nil || !strings.Contains(err.Error(), `samActionLogs[55555].entityId: not a uuid: "not-a-uuid"`) {
				t.Errorf("bad entity: %v", err)
			}
			if got := e.export(); len(got.Partners) != 0 || len(got.SAMActionLogs) != 0 {
				t.Errorf("the failed imports kept %d partners, %d logs", len(got.Partners), len(got.SAMActionLogs))
			}
		})
	}
}

// import refuses a file it could not keep exactly, naming the place, and every refusal ends the
// same way and leaves the database as it was (issue 22: a repeated key dropped its first records
// and reported success; a repeated field kept the last; bad UTF-8 was stored as U+FFFD; a 10 MB
// business name went in; a malformed file said only "unexpected end of JSON input").
func TestImportRefusesWhatItCannotKeep(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			e := newTestEnv(t)
			e.vars["BACKOFFICE_DATABASE_URL"] = testdb.URL(t, engine)
			demo := importableDemo(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
			if _, _, err := e.run("import", e.writeDataset("demo.json", demo)); err != nil {
				t.Fatal(err)
			}
			before := e.export()
			partner := func(id int, name string) string {
				return `{"id": "` + testdb.SAMID(id).String() + `", "name": "` + name + `"}`
			}
			lead := `{"id": "` + testdb.SAMID(9).String() + `", "partnerId": "` + demo.Partners[0].ID.String() + `", "businessName": "B", "midId": null, "midId": "` + testdb.SAMID(10).String() + `"}`
			for _, c := range []struct{ name, file, want string }{
				{"key twice", `{"partners": [` + partner(1, "A") + `], "partners": [` + partner(2, "B") + `]}`,
					"partners: duplicate key: the file may hold each key once (line 1, column 77)"},
				{"field twice", `{"leads": [` + lead + `]}`, "leads[0].midId: duplicate field"},
				{"invalid UTF-8", `{"partners": [` + partner(1, "caf\xe9") + `]}`, "partners[0].name: malformed JSON: invalid UTF-8 (line 1, column 74)"},
				{"10 MB business name", `{"leads": [{"businessName": "` + strings.Repeat("x", 10<<20) + `"}]}`,
					"leads[0].businessName: longer than 255 characters (line 1, column 29)"},
				{"malformed", "{\n  \"partners\": [\n    " + partner(1, "A") + "\n    " + partner(2, "B") + "\n  ]\n}\n",
					"partners[1]: malformed JSON: invalid character '{' after array element (expecting ',' or ']') (line 4, column 5)"},
				{"truncated", "{\n  \"partners\": [\n    " + partner(1, "A") + ",\n    " + partner(2, "B")[:20],
					"partners[1].id: malformed JSON: unexpected end of the file (line 4, column 25)"},
				{"type", `{"leads": [{"serviceAcceptance": {"selectedCardPlanIds": ["` + testdb.SAMID(1).String() + `", 7]}}]}`,
					"leads[0].serviceAcceptance.selectedCardPlanIds[1]: expected a string, got number"},
				{"reference", `{"partners": [` + partner(1, "A") + `], "merchants": [{"id": "` + testdb.SAMID(3).String() + `", "partnerId": "` + testdb.SAMID(4).String() + `", "name": "M"}]}`,
					"merchants[0].partnerId: no partner with this id"},
			} {
				path := filepath.Join(e.dir, "bad.json")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
				_, _, err := e.run("import", path)
				if want := "import " + path + ": " + c.want; err == nil || !strings.HasPrefix(err.Error(), want) ||
					!strings.HasSuffix(err.Error(), " (nothing was imported)") {
					t.Errorf("%s: error %v, want %q … (nothing was imported)", c.name, err, want)
				}
			}
			_, _, err := e.run("import", filepath.Join(e.dir, "missing.json"))
			if err == nil || !strings.HasSuffix(err.Error(), " (nothing was imported)") {
				t.Errorf("a missing file: %v", err)
			}
			key := e.vars["BACKOFFICE_MASTER_KEY"]
			delete(e.vars, "BACKOFFICE_MASTER_KEY")
			_, _, err = e.run("import", e.writeDataset("demo.json", demo))
			if err == nil || !strings.HasSuffix(err.Error(), " (nothing was imported)") {
				t.Errorf("no master key: %v", err)
			}
			e.vars["BACKOFFICE_MASTER_KEY"] = key
			if diff := cmp.Diff(before, e.export()); diff != "" {
				t.Errorf("the database changed:\n%s", diff)
			}
		})
	}
}
