package api

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	// The runtime that oapi-codegen's output imports. Importing it here keeps it in go.mod and
	// go.sum and in the module cache, so the generated code compiles offline.
	_ "github.com/oapi-codegen/runtime"
	_ "github.com/oapi-codegen/runtime/types"
)

// TestGeneratedClientCompiles does what an integrator does with openapi.yaml: it generates types
// and a client with oapi-codegen (the version pinned in go.mod's tool block, default options) and
// compiles the result in a module of its own. A document that a generator cannot turn into
// compiling code, or that types a number loosely, fails here.
func TestGeneratedClientCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and compiles a client: slow")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "gen"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "gen", "gen.go")
	goCmd(t, ".", nil, "tool", "oapi-codegen", "-generate", "types,client", "-package", "gen", "-o", out, "openapi.yaml")

	modules := []string{"github.com/oapi-codegen/runtime", "go.yaml.in/yaml/v3"}
	versions := strings.Fields(goCmd(t, ".", nil, append([]string{"list", "-m", "-f", "{{.Path}} {{.Version}}"}, modules...)...))
	var mod strings.Builder
	mod.WriteString("module gentest\n\ngo 1.26\n\nrequire (\n")
	for i := 0; i+1 < len(versions); i += 2 {
		mod.WriteString("\t" + versions[i] + " " + versions[i+1] + "\n")
	}
	mod.WriteString(")\n")
	writeFile(t, filepath.Join(dir, "go.mod"), mod.String())
	sum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), string(sum))
	// Offline: every module it needs is one this repository already requires.
	env := []string{"GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
	goCmd(t, dir, env, "vet", "./...")

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

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
