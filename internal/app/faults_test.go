package app

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Commands other than serve and import never create the database: on a missing file they fail
// with one line naming it, and leave no file behind.
func TestCommandsDoNotCreateTheDatabase(t *testing.T) {
	e := newTestEnv(t)
	path := strings.TrimPrefix(e.vars["BACKOFFICE_DATABASE_URL"], "sqlite:")
	for _, args := range [][]string{
		{"apikey", "list"}, {"session", "list"}, {"keys", "status"}, {"keys", "rewrap"}, {"export", "-"},
		{"apikey", "create", "--user", demoID(101).String()}, {"apikey", "revoke", demoID(111).String()},
	} {
		_, _, err := e.run(args...)
		if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s on a missing database: %v, want one line naming %s", strings.Join(args, " "), err, path)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s created the database: %v", strings.Join(args, " "), err)
		}
	}
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatalf("import creates the database: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database made by import: %v, %v; want mode 0600", fi, err)
	}
	if _, _, err := e.run("apikey", "list"); err != nil {
		t.Fatalf("apikey list on the imported database: %v", err)
	}
}

// The database file removed under a running server: /readyz says so, and a delete is not
// answered 204 into the removed file.
func TestServeNotReadyWhenTheDatabaseFileIsRemoved(t *testing.T) {
	e := newTestEnv(t)
	if _, _, err := e.run("import", e.writeDataset("demo.json", importableDemo(time.Now().UTC()))); err != nil {
		t.Fatal(err)
	}
	addr, _ := servedOps(t, map[string]string{"BACKOFFICE_DATABASE_URL": e.vars["BACKOFFICE_DATABASE_URL"],
		"BACKOFFICE_MASTER_KEY": e.vars["BACKOFFICE_MASTER_KEY"]})
	base := "http://" + addr
	if status, body := fetch(t, base+"/readyz"); status != http.StatusOK {
		t.Fatalf("readyz before: %d %s", status, body)
	}
	if err := os.Remove(strings.TrimPrefix(e.vars["BACKOFFICE_DATABASE_URL"], "sqlite:")); err != nil {
		t.Fatal(err)
	}
	status, body := fetch(t, base+"/readyz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_ready"`) {
		t.Errorf("readyz after the file was removed: %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"/v1/crm/merchants/"+demoMerchant.String()+"/documents/"+demoDocument.String(), nil)
	req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("delete into a removed database file: %d, want 503", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "bo.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the server made a new database file: %v", err)
	}
}

// The database file replaced under a running server by one in which the caller's key is revoked:
// the server answers nothing from the file it opened (which nobody writes any more), 503 until
// that file is back at its path.
func TestServeAnswersNothingFromAReplacedDatabaseFile(t *testing.T) {
	e := newTestEnv(t)
	url := e.vars["BACKOFFICE_DATABASE_URL"]
	path := strings.TrimPrefix(url, "sqlite:")
	dataset := e.writeDataset("demo.json", importableDemo(time.Now().UTC()))
	if _, _, err := e.run("import", dataset); err != nil {
		t.Fatal(err)
	}
	// The replacement: the same records, the caller's key revoked.
	replacement := filepath.Join(e.dir, "new.db")
	e.vars["BACKOFFICE_DATABASE_URL"] = "sqlite:" + replacement
	if _, _, err := e.run("import", dataset); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.run("apikey", "revoke", demoID(111).String()); err != nil {
		t.Fatal(err)
	}
	e.vars["BACKOFFICE_DATABASE_URL"] = url

	addr, _ := servedOps(t, map[string]string{"BACKOFFICE_DATABASE_URL": url, "BACKOFFICE_MASTER_KEY": e.vars["BACKOFFICE_MASTER_KEY"]})
	read := func() int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/crm/leads/"+string(demoLead)+"/service-acceptance", nil)
		req.Header.Set("Authorization", "Api-Key "+importedStaffKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := read(); status != http.StatusOK {
		t.Fatalf("read before the swap: %d", status)
	}
	if err := os.Link(path, path+".opened"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(replacement, path); err != nil {
		t.Fatal(err)
	}
	if status := read(); status != http.StatusServiceUnavailable {
		t.Errorf("read with a key revoked in the new file: %d, want 503", status)
	}
	if status, body := fetch(t, "http://"+addr+"/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("readyz after the swap: %d %s", status, body)
	}
	if err := os.Rename(path+".opened", path); err != nil {
		t.Fatal(err)
	}
	if status := read(); status != http.StatusOK {
		t.Errorf("read once the opened file is back: %d, want 200", status)
	}
}
