package main

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// archiveFiles are the files of an archive of n events, as `backoffice audit prune` writes one:
// the signed checkpoint of their tree, its tiles, and events.jsonl. It returns the verifier key.
func archiveFiles(t *testing.T, n int) (map[string][]byte, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "backoffice.test/audit")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	tag := bytes.Repeat([]byte{7}, 32)
	var leaves [][]byte
	var lines bytes.Buffer
	for seq := int64(1); seq <= int64(n); seq++ {
		e := event{ID: fmt.Sprint("e", seq), At: time.Unix(1700000000+seq, 0).UTC(), ActorUserID: "u", Action: "principal.decrypt",
			TargetID: "p", Outcome: "granted", Detail: "field ssn", Seq: seq, ChainKeyID: "k1"}
		leaves = append(leaves, append(bytes.Clone(tag), eventHash(e)...))
		line, err := json.Marshal(archived{Event: e, Tag: tag})
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(append(line, '\n'))
	}
	dir := t.TempDir()
	tree := writeTree(t, dir, leaves)
	files := map[string][]byte{"events.jsonl": lines.Bytes()}
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if strings.Contains(rel, "entries") {
			return nil // an archive holds hashes and events.jsonl, no entry bundles
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("backoffice.test/audit\n%d\n%s\n", tree.N, base64.StdEncoding.EncodeToString(tree.Hash[:]))
	signed, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		t.Fatal(err)
	}
	files["checkpoint"] = signed
	return files, vkey
}

// writeZip writes files into a zip archive and returns its path.
func writeZip(t *testing.T, files map[string][]byte) string {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for name, data := range files {
		w, err := z.Create(name) // deflated: a run of zeros takes a few bytes
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "archive.zip")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An archive is read in bounded pieces: a file in it that inflates past what any tile, checkpoint
// or event line can be is refused, naming it, instead of being read into memory; the archive
// itself is never read whole.
func TestArchiveRefusesWhatInflatesPastItsBound(t *testing.T) {
	files, key := archiveFiles(t, 300)
	if err := runArchive(options{key: key, archive: writeZip(t, files)}); err != nil {
		t.Fatalf("a good archive: %v", err)
	}
	huge := make([]byte, 4*maxObject)

	tile := "tile/0/000"
	if _, ok := files[tile]; !ok {
		t.Fatalf("no %s among %d files", tile, len(files))
	}
	inflated := map[string][]byte{}
	for k, v := range files {
		inflated[k] = v
	}
	inflated[tile] = huge
	err := runArchive(options{key: key, archive: writeZip(t, inflated)})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a tile that inflates past %d bytes: %v", maxObject, err)
	}

	inflated[tile] = files[tile]
	inflated["events.jsonl"] = append(bytes.Clone(files["events.jsonl"]), huge...)
	err = runArchive(options{key: key, archive: writeZip(t, inflated)})
	if err == nil || !strings.Contains(err.Error(), "events.jsonl") || !strings.Contains(err.Error(), "too long") {
		t.Errorf("an events.jsonl line of %d bytes: %v", len(huge), err)
	}
}

// An answer of the service larger than any tile or checkpoint is refused, naming the request,
// not cut to the bound and checked as if it were whole.
func TestFetchRefusesAnAnswerPastItsBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(make([]byte, maxObject+1))
	}))
	defer srv.Close()
	c := &tileClient{url: srv.URL, cache: map[string][]byte{}}
	if _, err := c.get("checkpoint"); err == nil || !strings.Contains(err.Error(), "GET checkpoint is larger than") {
		t.Fatalf("an answer of %d bytes: %v", maxObject+1, err)
	}
}
