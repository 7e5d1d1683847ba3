package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// testEnv runs commands against a fresh SQLite database with a fixed master key.
type testEnv struct {
	t    *testing.T
	dir  string
	vars map[string]string
}

func newTestEnv(t *testing.T) *testEnv {
	dir := t.TempDir()
	return &testEnv{t: t, dir: dir, vars: map[string]string{
		"BACKOFFICE_DATABASE_URL": "sqlite:" + filepath.Join(dir, "bo.db"),
		"BACKOFFICE_MASTER_KEY":   secrets.NewKey(),
	}}
}

func (e *testEnv) run(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = Run(context.Background(), Env{Args: args, Getenv: func(k string) string { return e.vars[k] },
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}

// writeDataset writes ds as a file in the test's folder.
func (e *testEnv) writeDataset(name string, ds *dataset.Dataset) string {
	e.t.Helper()
	var b bytes.Buffer
	if err := dataset.Write(&b, ds); err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

func (e *testEnv) export(args ...string) *dataset.Dataset {
	e.t.Helper()
	out, _, err := e.run(append([]string{"export", "-"}, args...)...)
	if err != nil {
		e.t.Fatalf("export: %v", err)
	}
	ds, err := dataset.Read(strings.NewReader(out))
	if err != nil {
		e.t.Fatalf("export is not a readable dataset: %v", err)
	}
	return ds
}

func TestImportThenExport(t *testing.T) {
	e := newTestEnv(t)
	ds := importableDemo(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
	out, _, err := e.run("import", e.writeDataset("demo.json", ds))
	if err != nil || !strings.Contains(out, "imported") {
		t.Fatalf("import: %q, %v", out, err)
	}
	raw, _, err := e.run("export", "-")
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"123-45-6789", importedStaffKey, importedSessionToken, `"ssn"`, `"apiKeys"`, `"sessions"`} {
		if strings.Contains(raw, leak) {
			t.Errorf("default export holds %s", leak)
		}
	}
	got := e.export()
	if len(got.Leads) != len(ds.Leads) || len(got.SAMActionLogs) != len(ds.SAMActionLogs) || len(got.LineItems) != len(ds.LineItems) || len(got.FileBuilds) != len(ds.FileBuilds) {
		t.Fatalf("export lost records: %d leads, %d logs, %d line items, %d file builds", len(got.Leads), len(got.SAMActionLogs), len(got.LineItems), len(got.FileBuilds))
	}
	withSecrets := e.export("--include-secrets")
	var ssns []string
	for _, p := range withSecrets.Principals {
		if p.SSN != nil {
			ssns = append(ssns, *p.SSN)
		}
	}
	if len(ssns) != 1 || ssns[0] != "123-45-6789" {
		t.Fatalf("--include-secrets SSNs: %v", ssns)
	}
}

// An export is a dataset the importer takes back: export, import elsewhere, export again.
func TestExportRoundTrip(t *testing.T) {
	a := newTestEnv(t)
	if _, _, err := a.run("import", a.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	first, _, err := a.run("export", "-", "--include-secrets")
	if err != nil {
		t.Fatal(err)
	}
	b := newTestEnv(t)
	b.vars["BACKOFFICE_MASTER_KEY"] = a.vars["BACKOFFICE_MASTER_KEY"]
	path := filepath.Join(b.dir, "export.json")
	if err := os.WriteFile(path, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.run("import", path); err != nil {
		t.Fatalf("re-import of an export: %v", err)
	}
	second, _, err := b.run("export", "-", "--include-secrets")
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("export → import → export changed the data")
	}
}

func TestImportIsAllOrNothing(t *testing.T) {
	e := newTestEnv(t)
	now := time.Now().UTC()
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(now))); err != nil {
		t.Fatal(err)
	}
	before, _, _ := e.run("export", "-")

	// A new batch whose very last record is bad: nothing of it may land.
	batch := &dataset.Dataset{
		Partners:      []domain.Partner{{ID: demoID(90001), Name: "New Partner"}},
		Leads:         []domain.Lead{{ID: demoID(90002), PartnerID: demoID(90001), BusinessName: "New Lead"}},
		SAMActionLogs: []domain.SAMActionLog{{ID: demoID(90003), EntityID: demoID(90002), Action: "a", ActionDate: now, SamID: 1}},
		AuditEvents:   []domain.AuditEvent{{ID: demoID(90004), At: now, ActorUserID: demoID(101), Action: "x", TargetID: "t", Outcome: "granted"}},
		LineItems: []domain.LineItem{{ID: demoID(90005), OrderID: demoID(99999), OrderType: "gateway", DeploymentModelID: demoID(701),
			Status: "pending", Stamps: domain.Stamps{CreatedAt: now, CreatedBy: demoID(101), UpdatedAt: now, UpdatedBy: demoID(101)}}},
	}
	_, _, err := e.run("import", e.writeDataset("bad.json", batch))
	if err == nil || !strings.Contains(err.Error(), "lineItems[0].orderId: no deployment order with this id") {
		t.Fatalf("import error %v", err)
	}
	if after, _, _ := e.run("export", "-"); after != before {
		t.Fatal("a failed import changed the database")
	}

	// The same file twice: the second is all duplicates, and changes nothing either.
	_, _, err = e.run("import", e.writeDataset("demo.json", importableDemo(now)))
	if err == nil || !strings.Contains(err.Error(), "partners[0].id: duplicate id") {
		t.Fatalf("duplicate import error %v", err)
	}
	if after, _, _ := e.run("export", "-"); after != before {
		t.Fatal("a duplicate import changed the database")
	}
}

// References may point forward in the file, and to records already in the database.
func TestImportReferencesInAnyOrder(t *testing.T) {
	e := newTestEnv(t)
	now := time.Now().UTC()
	full := importableDemo(now)
	// First only the partners and users; then the rest, which refers back to them.
	first := &dataset.Dataset{Partners: full.Partners, Users: full.Users}
	rest := *full
	rest.Partners, rest.Users = nil, nil
	// Within the file, put a referring record before the one it refers to.
	rest.SAMActionLogs = append([]domain.SAMActionLog{{ID: demoID(90010), EntityID: demoLineItem, Action: "first", ActionDate: now, SamID: 7}}, rest.SAMActionLogs...)
	if _, _, err := e.run("import", e.writeDataset("first.json", first)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.run("import", e.writeDataset("rest.json", &rest)); err != nil {
		t.Fatalf("import referring to existing records: %v", err)
	}
}

// Standard input is read through a temporary file (the import reads a file twice), removed after.
func TestImportFromStandardInput(t *testing.T) {
	e := newTestEnv(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var b bytes.Buffer
	if err := dataset.Write(&b, importableDemo(time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := Run(context.Background(), Env{Args: []string{"import", "-"}, Getenv: func(k string) string { return e.vars[k] },
		Stdin: &b, Stdout: &out, Stderr: &bytes.Buffer{}})
	if err != nil || !strings.Contains(out.String(), "imported") {
		t.Fatalf("import -: %q %v", out.String(), err)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("temporary files left: %v %v", left, err)
	}
	if got := e.export(); len(got.SAMActionLogs) == 0 {
		t.Error("no SAM action logs imported from standard input")
	}
}

func TestMasterKeyIsRequired(t *testing.T) {
	e := newTestEnv(t)
	delete(e.vars, "BACKOFFICE_MASTER_KEY")
	for _, args := range [][]string{{"import", "x.json"}, {"serve", "--addr", "127.0.0.1:0"}, {"export", "-", "--include-secrets"}} {
		_, _, err := e.run(args...)
		if err == nil || !strings.Contains(err.Error(), "BACKOFFICE_MASTER_KEY is not set; make one with") {
			t.Errorf("%v: %v", args, err)
		}
	}
	e.vars["BACKOFFICE_MASTER_KEY"] = "too-short"
	if _, _, err := e.run("import", "x.json"); err == nil {
		t.Error("a bad master key was accepted")
	}
}

func TestUsageErrors(t *testing.T) {
	e := newTestEnv(t)
	for _, args := range [][]string{{}, {"frobnicate"}, {"import"}, {"export"}, {"serve", "extra"}, {"serve", "--no-such-flag"}} {
		if _, _, err := e.run(args...); !errors.Is(err, ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// The database files hold no plaintext secret: not the SSNs, not the credentials, not the key.
func TestNoPlaintextSecretsAtRest(t *testing.T) {
	e := newTestEnv(t)
	ds := importableDemo(time.Now().UTC())
	if _, _, err := e.run("import", e.writeDataset("demo.json", ds)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.dir, "demo.json")); err != nil {
		t.Fatal(err)
	}
	key, _ := secrets.ParseMasterKey(e.vars["BACKOFFICE_MASTER_KEY"])
	needles := [][]byte{[]byte(e.vars["BACKOFFICE_MASTER_KEY"]), key.Bytes}
	for _, p := range ds.Principals {
		if p.SSN != nil {
			needles = append(needles, []byte(*p.SSN), []byte(strings.ReplaceAll(*p.SSN, "-", "")))
		}
	}
	for _, k := range ds.APIKeys {
		needles = append(needles, []byte(k.Key))
	}
	for _, s := range ds.Sessions {
		needles = append(needles, []byte(s.Token))
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "*"))
	if len(files) == 0 {
		t.Fatal("no database files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("%s holds a plaintext secret (%d bytes)", filepath.Base(f), len(n))
			}
		}
	}
}

func TestExportFileIsWrittenWhole(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, "out.json")
	if _, _, err := e.run("export", path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !json.Valid(b) {
		t.Fatalf("export file: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("export mode %v, want 0600", fi.Mode().Perm())
	}
}

// A deleted document's content is gone from the database files, not only from its table.
func TestDeletedDocumentLeavesNoBytes(t *testing.T) {
	e := newTestEnv(t)
	ds := importableDemo(time.Now().UTC())
	secret := []byte("UNIQUE-DOCUMENT-CONTENT-7f3a9c")
	ds.MerchantDocuments[0].ContentBase64 = secret
	if _, _, err := e.run("import", e.writeDataset("demo.json", ds)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(e.dir, "demo.json"))
	st, err := store.Open(context.Background(), e.vars["BACKOFFICE_DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	key, err := secrets.ParseMasterKey(e.vars["BACKOFFICE_MASTER_KEY"])
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secrets.NewRing(key)
	if err != nil {
		t.Fatal(err)
	}
	st.SetChainSigner(ring)
	event := domain.AuditEvent{At: time.Now(), ActorUserID: demoID(101), Action: "merchant_document.delete", TargetID: string(demoDocument)}
	if err := st.DeleteMerchantDocument(context.Background(), domain.Scope{}, demoMerchant, demoDocument, event); err != nil {
		t.Fatal(err)
	}
	// The WAL is checkpointed in the background, and at the latest when the store closes (the
	// store's own test checks it while the store is open).
	st.Close()
	files, _ := filepath.Glob(filepath.Join(e.dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, secret) {
			t.Errorf("%s still holds the deleted document's bytes", filepath.Base(f))
		}
	}
}

// An export (or a proof) never replaces a file of its own configuration, however the name is
// spelled: the SQLite database, the checkpoints file, the key ring's file. A file of its own it
// replaces as before.
func TestExportNeverReplacesItsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "bo.db")
	c := newCLI(t, "sqlite:"+db, "k1")
	c.importFile(testDataset(0))
	ring := filepath.Join(dir, "ring")
	if err := os.WriteFile(ring, []byte(c.vars["BACKOFFICE_MASTER_KEYS"]), 0o600); err != nil {
		t.Fatal(err)
	}
	delete(c.vars, "BACKOFFICE_MASTER_KEYS")
	c.vars["BACKOFFICE_MASTER_KEYS_FILE"] = ring
	checkpoints := filepath.Join(dir, "checkpoints")
	if err := os.WriteFile(checkpoints, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = checkpoints
	if err := os.Symlink(db, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{db, filepath.Join(dir, "..", filepath.Base(dir), "bo.db"), filepath.Join(dir, "link.db"), ring, checkpoints} {
		before := readFile(t, target)
		if _, _, err := c.run("export", "--include-secrets", target); !errors.Is(err, ErrUsage) {
			t.Errorf("export onto %s: %v, want refused", target, err)
		}
		if readFile(t, target) != before {
			t.Errorf("export onto %s changed it", target)
		}
	}
	out := filepath.Join(dir, "export.json")
	for range 2 {
		c.mustRun("export", out)
	}
}
