package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// background runs a long-lived command (serve, gateway-sim) until stop is called; stop returns
// the command's error.
func background(getenv func(string) string, args ...string) (stdout, stderr *lockedBuffer, stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Env{Args: args, Getenv: getenv, Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr})
	}()
	return stdout, stderr, func() error {
		cancel()
		return <-done
	}
}

func noEnv(string) string { return "" }

// Test records: a partner, a staff user with every permission and an imported API key, a lead.
var (
	testPartner   = demoID(1)
	testStaff     = demoID(101)
	testLead      = demoID(301)
	testStaffKey  = "imported-staff-key-92A03rIL8oL_UUxLw8fqWVXW5oe9SSOpQUVhP5AR4aE"
	testImportKey = demoID(111)
)

func testPrincipal(i int) domain.ID { return demoID(100000 + i) }

// testSSN is principal i's SSN: distinct per principal, so a wrong answer cannot pass.
func testSSN(i int) string { return fmt.Sprintf("%03d-%02d-%04d", i%1000, i%100, i%10000) }

// ringSpec is the BACKOFFICE_MASTER_KEYS value of the ring with these ids.
func ringSpec(ids ...string) string {
	var entries []string
	for _, id := range ids {
		entries = append(entries, id+":"+base64.StdEncoding.EncodeToString(testdb.Key(id).Bytes))
	}
	return strings.Join(entries, ",")
}

// testDataset holds the test records and n principals with SSNs.
func testDataset(n int) *dataset.Dataset {
	ds := &dataset.Dataset{
		Partners: []domain.Partner{{ID: testPartner, Name: "Partner"}},
		Users:    []domain.User{{ID: testStaff, Email: "ops@example.com", Permissions: []domain.Permission{domain.PermAll}}},
		APIKeys:  []domain.APIKey{{ID: testImportKey, UserID: testStaff, Key: testStaffKey}},
		Leads:    []domain.Lead{{ID: testLead, PartnerID: testPartner, BusinessName: "Lead"}},
	}
	for i := range n {
		ds.Principals = append(ds.Principals, domain.Principal{ID: testPrincipal(i), LeadID: testLead, FirstName: "F", LastName: "L", SSN: ptr(testSSN(i))})
	}
	return ds
}

func importDataset(t testing.TB, st *store.Store, ds *dataset.Dataset, ring *secrets.Ring) {
	t.Helper()
	if _, err := dataset.Import(context.Background(), st, ds, ring); err != nil {
		t.Fatal(err)
	}
}

// serveAPI runs the real handler, as serve wires it, over st and ring; logs go to the returned
// buffer.
func serveAPI(t testing.TB, st *store.Store, ring *secrets.Ring) (*httptest.Server, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	srv := httptest.NewServer(newHandler(Config{}, st, ring, slog.New(slog.NewJSONHandler(logs, nil)), nil, nil))
	t.Cleanup(srv.Close)
	return srv, logs
}

// get sends an authenticated GET and returns the status and body. It reports errors instead of
// failing the test, so client goroutines can use it; t may be nil.
func get(t testing.TB, srv *httptest.Server, path, authorization string) (int, []byte, error) {
	if t != nil {
		t.Helper()
	}
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", authorization)
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func decryptPath(principal domain.ID) string {
	return "/v1/crm/leads/" + string(testLead) + "/principals/" + string(principal) + "/decrypt/ssn"
}

// cli runs app.Run against one SQLite database, as a user at a shell would.
type cli struct {
	t    *testing.T
	vars map[string]string
}

func newCLI(t *testing.T, url string, ringIDs ...string) *cli {
	return &cli{t: t, vars: map[string]string{"BACKOFFICE_DATABASE_URL": url, "BACKOFFICE_MASTER_KEYS": ringSpec(ringIDs...)}}
}

func (c *cli) run(args ...string) (stdout, stderr string, err error) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	err = Run(context.Background(), Env{Args: args, Getenv: envOf(c.vars), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}

// mustRun runs a command that must succeed and returns its standard output.
func (c *cli) mustRun(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("backoffice %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// importFile writes ds to a file and imports it with `backoffice import`.
func (c *cli) importFile(ds *dataset.Dataset) {
	c.t.Helper()
	path := filepath.Join(c.t.TempDir(), "dataset.json")
	f, err := os.Create(path)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := dataset.Write(f, ds); err != nil {
		c.t.Fatal(err)
	}
	f.Close()
	c.mustRun("import", path)
}

// Strong secrets for the demo dataset as the tests import it from a file (importableDemo): an
// import refuses the demo's own keys, which are public and weak and which only serve --demo
// serves, in its own database.
const (
	importedStaffKey     = "demo-staff-key-7z1E5p2UFZMt2XR1R0o88b94rLN_2N1_xHL-7Q1cz6U"
	importedPartnerKey   = "demo-partner-key-2KmRCEXrd9AtAO2w4Xt0xPxihjjA4biVT03oUIhVYKg"
	importedSessionToken = "demo-session-qteRDxTz7qS6oXce5-ANm6IDZlJHaeRbNsEbNgDN1fk"
)

// importableDemo is the demo dataset with importedStaffKey, importedPartnerKey and
// importedSessionToken for its secrets.
func importableDemo(now time.Time) *dataset.Dataset {
	ds := demoDataset(now)
	for i := range ds.APIKeys {
		switch ds.APIKeys[i].Key {
		case demoAPIKey:
			ds.APIKeys[i].Key = importedStaffKey
		case demoPartnerAPIKey:
			ds.APIKeys[i].Key = importedPartnerKey
		}
	}
	for i := range ds.Sessions {
		ds.Sessions[i].Token = importedSessionToken
	}
	return ds
}
