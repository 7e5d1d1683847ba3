package api

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	// The runtime that oapi-codegen's output imports. Importing it here keeps it in go.mod and
	// go.sum and in the module cache, so the generated code compiles offline.
	_ "github.com/oapi-codegen/runtime"
	_ "github.com/oapi-codegen/runtime/types"
)

// TestGeneratedClientCompiles does what an integrator does with openapi.yaml: it generates types
// and a client with oapi-codegen (the version pinned in go.mod's tool block, default options) and
// compiles the result in a module of its own. A document that a generator cannot turn into
// compiling code, that types a number loosely, that makes an enum member of null (oapi-codegen
// turns it into a constant "<nil>" that Valid accepts), or that leaves an operation's errors
// without the one convenient type (ClientWithResponses' JSONDefault, from the default response)
// fails here.
func TestGeneratedClientCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and compiles a client: slow")
	}
	dir := generatedDir(t)
	out := filepath.Join(dir, "gen.go")
	goCmd(t, ".", nil, "tool", "oapi-codegen", "-generate", "types,client", "-package", "gen", "-o", out, "openapi.yaml")
	goCmd(t, ".", []string{"GOPROXY=off", "GOFLAGS=-mod=readonly"}, "vet", "./"+filepath.ToSlash(dir))

	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\bSamId\s+int64\b`).Match(src) {
		t.Errorf("samId is not generated as an int64")
	}
	if m := regexp.MustCompile(`(?m)^\s*\w+\s+\*?float(32|64)\b.*$`).FindAll(src, -1); len(m) > 0 {
		t.Errorf("fields typed as floats, but the service produces only integers: %q", m)
	}
	if m := regexp.MustCompile(`(?m)^\s*\w+\s+\w+\s*=\s*"<nil>"`).FindAll(src, -1); len(m) > 0 {
		t.Errorf("enum members made of null: %q", m)
	}
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			name := strings.ToUpper(op.OperationID[:1]) + op.OperationID[1:] + "Response"
			body := regexp.MustCompile(`(?s)type ` + name + ` struct \{(.*?)\n\}`).FindSubmatch(src)
			if body == nil || !regexp.MustCompile(`\bJSONDefault\s+\*Error\b`).Match(body[1]) {
				t.Errorf("%s has no JSONDefault *Error: a client cannot read every error of %s as one type", name, op.OperationID)
			}
		}
	}
}

// generatedDir makes a directory for a generated package. It is inside this module (under
// testdata, which ./... skips), so that the package compiles against the very modules go.mod and
// go.sum pin: no download, no second module whose graph would need modules this one never fetched.
func generatedDir(t *testing.T) string {
	t.Helper()
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "generated-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
