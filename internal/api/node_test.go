package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// What the tests run with node, where it is installed: ajv over every answer the tests validate
// (TestMain), and a TypeScript client (typescript_test.go). The packages are pinned in
// testdata/node/package.json and its lock, and installed with `npm ci` into a cache outside the
// repository (the user's cache directory, one folder per lock), once per machine.

// nodeDir is where testdata/node's scripts live.
const nodeDir = "testdata/node"

var (
	nodeOnce    sync.Once
	nodeModules string
	nodeErr     error
)

// errNoNode says node (or npm) is not installed: the node checks are skipped, not failed.
var errNoNode = errors.New("node and npm are not installed")

// installedNodeModules returns a folder holding node_modules with testdata/node's packages.
func installedNodeModules() (string, error) {
	nodeOnce.Do(func() { nodeModules, nodeErr = installNodeModules() })
	return nodeModules, nodeErr
}

func installNodeModules() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errNoNode
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", errNoNode
	}
	lock, err := os.ReadFile(filepath.Join(nodeDir, "package-lock.json"))
	if err != nil {
		return "", err
	}
	pkg, err := os.ReadFile(filepath.Join(nodeDir, "package.json"))
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256(append(pkg, lock...))
	dir := filepath.Join(cache, "backoffice-tests", "node-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir, nil
	}
	// Installed beside the final folder and renamed into place, so that a test binary running at
	// the same time never sees half an install.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "installing-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules")); statErr != nil {
			return "", err
		}
	}
	return dir, nil
}

// nodeModulesFor skips t where node is not installed, and fails it where the packages cannot be
// installed.
func nodeModulesFor(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("installs and runs node packages: slow")
	}
	dir, err := installedNodeModules()
	if errors.Is(err, errNoNode) {
		t.Skip("node and npm are not installed (.ci/run installs them)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ajvAnswer is one answer for ajv: the operation, its status, its body's schema and the body.
type ajvAnswer struct {
	Operation string          `json:"operation"`
	Status    int             `json:"status"`
	Schema    json.RawMessage `json:"schema"`
	Body      string          `json:"body"`
}

var ajvAnswers = struct {
	sync.Mutex
	byKey map[[32]byte]ajvAnswer
}{byKey: map[[32]byte]ajvAnswer{}}

// keepForAjv keeps an answer validate has checked, once per distinct operation, status and body.
func keepForAjv(operation string, status int, schema *openapi3.SchemaRef, body []byte) {
	var s json.RawMessage
	if schema.Ref != "" {
		s, _ = json.Marshal(map[string]string{"$ref": schema.Ref})
	} else {
		s, _ = json.Marshal(schema.Value)
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s %d %s %s", operation, status, s, body))
	ajvAnswers.Lock()
	defer ajvAnswers.Unlock()
	ajvAnswers.byKey[key] = ajvAnswer{Operation: operation, Status: status, Schema: s, Body: string(body)}
}

// TestMain runs the tests, then ajv over every answer they validated: a second JSON Schema
// validator, the one most of the field uses, strict, reading the document through the converter
// most of the field uses. Without node it says so and skips.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && !testing.Short() {
		if err := checkAnswersWithAjv(); errors.Is(err, errNoNode) {
			fmt.Println("ajv check skipped: node and npm are not installed (.ci/run installs them)")
		} else if err != nil {
			fmt.Println("FAIL: ajv check:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func checkAnswersWithAjv() error {
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" && len(ajvAnswers.byKey) == 0 {
		return nil // a run of tests that validated nothing
	}
	modules, err := installedNodeModules()
	if err != nil {
		return err
	}
	answers := make([]ajvAnswer, 0, len(ajvAnswers.byKey))
	for _, a := range ajvAnswers.byKey {
		answers = append(answers, a)
	}
	sort.Slice(answers, func(i, j int) bool {
		if answers[i].Operation != answers[j].Operation {
			return answers[i].Operation < answers[j].Operation
		}
		return answers[i].Status < answers[j].Status
	})
	if len(answers) == 0 {
		return errors.New("no answer was kept for ajv")
	}
	out, err := runAjv(modules, answers)
	fmt.Print(out)
	return err
}

// runAjv runs testdata/node/ajv.mjs over answers; it fails when ajv refuses one.
func runAjv(modules string, answers []ajvAnswer) (string, error) {
	doc, err := strictDocument()
	if err != nil {
		return "", err
	}
	in, err := json.Marshal(map[string]any{"document": doc, "answers": answers})
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "backoffice-ajv-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	input := filepath.Join(dir, "answers.json")
	if err := os.WriteFile(input, in, 0o644); err != nil {
		return "", err
	}
	// The script runs from the install's folder, so that its imports resolve there.
	b, err := os.ReadFile(filepath.Join(nodeDir, "ajv.mjs"))
	if err != nil {
		return "", err
	}
	runnable := filepath.Join(modules, "ajv-run-"+filepath.Base(dir)+".mjs")
	if err := os.WriteFile(runnable, b, 0o644); err != nil {
		return "", err
	}
	defer os.Remove(runnable)
	out, err := exec.Command("node", runnable, input).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ajv refused answers: %v", err)
	}
	return string(out), nil
}

// The ajv check is no formality: it refuses a null where the document has none, an enum value the
// document does not list, an added field (in the tests' closed copy) and a 400 without its
// parameter, and takes the nulls the document allows.
func TestAjvRefusesWhatTheDocumentForbids(t *testing.T) {
	modules := nodeModulesFor(t)
	ref := func(name string) json.RawMessage {
		return json.RawMessage(`{"$ref":"#/components/schemas/` + name + `"}`)
	}
	acceptance := `{"midId":null,"configured":false,"cardPlans":[],"ebtFcsNumber":null,"amexProgram":null,"amexEsaNumber":null,"ebtBenefitMode":null}`
	good := []ajvAnswer{
		{"acceptance", 200, ref("ServiceAcceptance"), acceptance},
		{"line item", 200, ref("DeploymentOrderLineItem"), lineItemJSON("null")},
		{"bad request", 400, ref("BadRequestError"), `{"status":400,"code":"invalid_parameter","detail":"x","parameter":"page"}`},
	}
	bad := []ajvAnswer{
		{"acceptance, unknown enum value", 200, ref("ServiceAcceptance"), strings.Replace(acceptance, `"amexProgram":null`, `"amexProgram":"gold"`, 1)},
		{"acceptance, null configured", 200, ref("ServiceAcceptance"), strings.Replace(acceptance, `"configured":false`, `"configured":null`, 1)},
		{"acceptance, added field", 200, ref("ServiceAcceptance"), strings.Replace(acceptance, `{`, `{"extra":1,`, 1)},
		{"line item, inventory unit a string", 200, ref("DeploymentOrderLineItem"), lineItemJSON(`"unit"`)},
		{"bad request without parameter", 400, ref("BadRequestError"), `{"status":400,"code":"invalid_parameter","detail":"x"}`},
	}
	if out, err := runAjv(modules, good); err != nil {
		t.Fatalf("valid answers refused: %v\n%s", err, out)
	}
	out, err := runAjv(modules, bad)
	if err == nil {
		t.Fatalf("invalid answers accepted:\n%s", out)
	}
	for _, a := range bad {
		if !strings.Contains(out, a.Operation+" -> ") {
			t.Errorf("%s: accepted\n%s", a.Operation, out)
		}
	}
}
