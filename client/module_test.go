package client_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"backoffice/client"
	"backoffice/internal/api"
	"backoffice/internal/app"
	"backoffice/internal/testdb"
)

// The program and go.mod of docs/client.md, in a module of their own that reaches this one by a
// replace directive, build and run against the service: the page shows what works.
func TestDocumentedModuleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module: slow")
	}
	doc, err := os.ReadFile("../docs/client.md")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"go.mod", "main.go"} {
		text := documentedFile(t, string(doc), name)
		if name == "go.mod" {
			text = strings.Replace(text, "=> ../backoffice", "=> "+root, 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	base := newService(t, testdb.Open(t, "sqlite"), api.Limits{}).serve(t)
	c := newClient(t, base, http.DefaultTransport, client.WithAPIKey(app.DemoAPIKey))
	if _, err := c.DecryptPrincipalSSN(context.Background(), lead, principal); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "BACKOFFICE_URL="+base, "BACKOFFICE_API_KEY="+app.DemoAPIKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	for _, want := range []string{"configured: true card plans: 4 request: true\n", "pushed; replayed: false\npushed; replayed: true\n",
		"deleted; replayed: false\ndeleted; replayed: true\n", "refused: invalid_parameter parameter: size\n", " " + staffUser + " granted\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// documentedFile is the fenced block that follows <!-- client-example: name --> in doc.
func documentedFile(t *testing.T, doc, name string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)<!-- client-example: " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/client.md has no %s example", name)
	}
	return m[1]
}
