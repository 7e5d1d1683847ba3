package main

import (
	"archive/tar"
	"bytes"
	debugbuildinfo "debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestContainerImage builds the image as docs/container.md says (its build block, run line by
// line from the repository's root with the context in a temporary folder), in a podman storage
// of the test's own, and checks what the image holds and what its binary says it is. It skips
// when podman is missing or cannot build here. It runs no container: some sandboxes cannot.
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a static binary and an image")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (apt-get install podman): the image is not tested")
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skip("no CA certificates to copy (apt-get install ca-certificates)")
	}
	doc, err := os.ReadFile("../../docs/container.md")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ctx := filepath.Join(tmp, "image")
	storage := filepath.Join(tmp, "storage.conf")
	conf := "[storage]\ndriver = \"vfs\"\ngraphroot = \"" + filepath.Join(tmp, "root") + "\"\nrunroot = \"" + filepath.Join(tmp, "run") + "\"\n"
	if err := os.WriteFile(storage, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CONTAINERS_STORAGE_CONF="+storage)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	containerfile, err := os.ReadFile("../../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range readmeBlock(t, doc, "container-build") {
		// The Containerfile's header repeats the lines: they must not drift apart.
		if !bytes.Contains(containerfile, []byte("\n#   "+line+"\n")) {
			t.Errorf("the Containerfile's header lacks the build line %q", line)
		}
		line = strings.ReplaceAll(line, "image/", ctx+"/")
		if rest, ok := strings.CutSuffix(line, " image"); ok {
			line = rest + " " + ctx
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		if err != nil && strings.HasPrefix(line, "podman ") {
			t.Skipf("podman cannot build here: %v\n%s", err, out)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	podman := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("podman", args...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	t.Cleanup(func() {
		rm := exec.Command("podman", "rm", "-f", "backoffice-test")
		rm.Env = env
		_ = rm.Run()
	})

	// The image's configuration.
	var images []struct {
		Config struct {
			User, WorkingDir string
			Entrypoint, Cmd  []string
			Env              []string
			Volumes          map[string]struct{}
		}
	}
	if err := json.Unmarshal(podman("image", "inspect", "backoffice"), &images); err != nil || len(images) != 1 {
		t.Fatalf("image inspect: %v", err)
	}
	c := images[0].Config
	if c.User != "65532:65532" || c.WorkingDir != "/data" || !slices.Equal(c.Entrypoint, []string{"/backoffice"}) ||
		!slices.Equal(c.Cmd, []string{"serve"}) || len(c.Volumes) != 1 || !slices.Contains(c.Env, "BACKOFFICE_ADDR=0.0.0.0:8080") ||
		!slices.Contains(c.Env, "BACKOFFICE_DATABASE_URL=sqlite:/data/backoffice.db") {
		t.Errorf("image configuration: %+v", c)
	}
	if _, ok := c.Volumes["/data"]; !ok {
		t.Errorf("volumes %v, want /data", c.Volumes)
	}

	// Its files: the binary, the certificates, and the two folders of the service's user.
	podman("create", "--name", "backoffice-test", "backoffice")
	files := imageFiles(t, podman("export", "backoffice-test"))
	want := []string{"backoffice", "data/", "etc/", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "tmp/"}
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, want) {
		t.Errorf("the image holds %v, want %v (no shell, nothing else)", got, want)
	}
	for name, owner := range map[string]string{"backoffice": "0:0", "etc/ssl/certs/ca-certificates.crt": "0:0", "data/": "65532:65532", "tmp/": "65532:65532"} {
		if files[name].owner != owner {
			t.Errorf("%s is owned by %s, want %s", name, files[name].owner, owner)
		}
	}

	// Its binary is static and says which build it is, as the one built on the host does.
	bin := filepath.Join(tmp, "from-image")
	if err := os.WriteFile(bin, files["backoffice"].content, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := debugbuildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(info.Settings, func(s debug.BuildSetting) bool { return s.Key == "CGO_ENABLED" && s.Value == "0" }) {
		t.Errorf("the image's binary was not built with CGO_ENABLED=0: %v", info.Settings)
	}
	fromImage, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	fromHost, err := exec.Command(filepath.Join(ctx, "backoffice"), "version").Output()
	if err != nil || !bytes.Equal(fromImage, fromHost) {
		t.Errorf("version of the image's binary:\n%s\nof the host's (%v):\n%s", fromImage, err, fromHost)
	}
	if want := expectedRevision(t, root); !strings.Contains(string(fromImage), "\nrevision: "+want) {
		t.Errorf("version:\n%s\nwant revision %s", fromImage, want)
	}
}

// imageFile is one entry of an exported container's file system.
type imageFile struct {
	owner   string // uid:gid
	regular bool
	content []byte // of a regular file
}

// imageFiles lists an exported file system (a tar), directories with a trailing slash.
func imageFiles(t *testing.T, export []byte) map[string]imageFile {
	t.Helper()
	files := map[string]imageFile{}
	tr := tar.NewReader(bytes.NewReader(export))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		f := imageFile{owner: fmt.Sprintf("%d:%d", h.Uid, h.Gid), regular: h.Typeflag == tar.TypeReg}
		if h.Typeflag == tar.TypeDir && !strings.HasSuffix(name, "/") {
			name += "/"
		}
		if f.regular {
			if f.content, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
		files[name] = f
	}
}

// expectedRevision is the commit a -buildvcs=true build from root records: HEAD, or unknown when
// the Go toolchain does not see a repository there (it wants a .git directory: a linked git
// worktree has a .git file).
func expectedRevision(t *testing.T, root string) string {
	t.Helper()
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		return "unknown"
	}
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}
