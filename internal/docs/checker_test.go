package docs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeRepo writes files into a temporary directory and lists them as the repository; the files
// of ignored are written too but, like files git ignores, are not part of it.
func fakeRepo(t *testing.T, files map[string]string, ignored ...string) *repo {
	t.Helper()
	root := t.TempDir()
	var names []string
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ignored, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return newRepo(root, names)
}

func TestCheckLinks(t *testing.T) {
	up := ".." + "/"
	r := fakeRepo(t, map[string]string{
		"README.md": strings.Join([]string{
			"# Title",
			"[ok](docs/a.md) and [ok dir](internal/api) and ![img](docs/pic.png)",
			"[ok anchor](docs/a.md#second-part) [self](#title) [escaped](docs/with%20space.md)",
			"[web](https://example.com/x.md) [mail](mailto:a@b.example) [proto](//example.com)",
			"[missing](docs/missing.md)",
			"[outside](" + up + "elsewhere/file.md)",
			"[ignored](backoffice-demo/notes.md)",
			"[bad anchor](docs/a.md#no-such-heading)",
			"`[in a span](nowhere.md)` and ``[span `x`](nowhere.md)``",
			"```",
			"[in a fence](nowhere.md)",
			"```",
			"[ref]: docs/gone.md",
			`[titled](docs/a.md "A title")`,
		}, "\n"),
		"docs/a.md":                "# A\n\n## Second part\n\n## 4.1 Push `x` [link](#a)\n\n## Second part\n\n[up](" + up + "README.md#title) [dup](#second-part-1) [code](#41-push-x-link)\n",
		"docs/with space.md":       "x",
		"docs/pic.png":             "x",
		"internal/api/routes.go":   "package api",
		"backoffice-demo/notes.md": "x",
	}, "backoffice-demo/notes.md")

	var got []string
	for _, name := range []string{"README.md", "docs/a.md"} {
		got = append(got, r.checkLinks(name)...)
	}
	want := []string{
		`README.md:5: link "docs/missing.md": no such file in the repository`,
		`README.md:6: link "../elsewhere/file.md": points outside the repository`,
		`README.md:7: link "backoffice-demo/notes.md": no such file in the repository`,
		`README.md:8: link "docs/a.md#no-such-heading": docs/a.md has no heading #no-such-heading`,
		`README.md:13: link "docs/gone.md": no such file in the repository`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestAnchors(t *testing.T) {
	md := "# Title\n## Every request and response\n### `partners` (import only)\n## 4.1 Push device parameters\n" +
		"## Storage behaviour that matters under load (SQLite)\n## Title\n```\n# not a heading\n```\n<a id=\"custom\"></a>\n"
	want := []string{"title", "every-request-and-response", "partners-import-only", "41-push-device-parameters",
		"storage-behaviour-that-matters-under-load-sqlite", "title-1", "custom"}
	if diff := cmp.Diff(want, anchors([]byte(md))); diff != "" {
		t.Errorf("anchors (-want +got):\n%s", diff)
	}
}

func TestCheckPrivateReference(t *testing.T) {
	shared, seed := "sha"+"red", "se"+"ed"
	r := fakeRepo(t, map[string]string{
		"client.go":        "// one entry (" + seed + " 2.7)\n// a page (" + seed + " 4.6) ok\n",
		"auth.go":          "// accepted (" + seed + " section 5)\n// as the " + seed + "'s client rule says\n",
		"docs/contract.md": "see section 4.1 of the con" + "tract\nas contract-" + "decisions says\nper the design " + "documents\n",
		"docs/fine.md":     "operation 4.1, RFC 6749 section 4.4, a random " + seed + ", seeds, " + seed + "ed\n",
		"README.md":        "fine\nsee ../" + shared + "/seed/contract.md\n",
		"x.go":             "// as in " + shared + "/design/style.md\n",
		"deep.yaml":        "ref: ../../" + shared + "\n",
		"ok.md":            "a shared lease row, shared/ alone, sharedfoo/seed/x\n",
		"bin.dat":          "\x00../" + shared + "/x",
		"docs/device.md":   "design/ and seed/ on their own are fine\n",
		"internal/x_sh.sh": "echo ../" + shared + "x\n",
	})
	var got []string
	for _, name := range r.files {
		for _, p := range r.checkPrivateReference(name) {
			got = append(got, strings.SplitN(p, ": ", 2)[0])
		}
	}
	want := []string{"README.md:2", "auth.go:1", "auth.go:2", "client.go:1", "client.go:2",
		"deep.yaml:1", "docs/contract.md:1", "docs/contract.md:2", "docs/contract.md:3", "x.go:1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mentions found (-want +got):\n%s", diff)
	}
}
