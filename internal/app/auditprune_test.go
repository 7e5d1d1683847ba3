package app

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/checkpoint"
	"backoffice/internal/domain"
	"backoffice/internal/testdb"
)

// pruneOld and pruneFresh are how many events pruneTrail writes two years ago, and now.
const (
	pruneOld   = 300
	pruneFresh = 5
)

// prunable is a trail with old events to prune: the database c uses (engine's), pruneOld events
// of two years ago (a minute apart from oldAt) after whatever the import wrote, pruneFresh of now,
// and a checkpoint of them all in file (BACKOFFICE_AUDIT_CHECKPOINTS).
type prunable struct {
	c           *cli
	url, file   string
	early       string // a checkpoints file of one checkpoint, after the first 20 old events
	oldAt       time.Time
	first, head int64 // the seq of the first old event, and of the newest
	dir         string
}

func pruneTrail(t *testing.T, engine string) *prunable {
	t.Helper()
	url := testdb.URL(t, engine)
	c := newCLI(t, url, "k1")
	c.importFile(testDataset(0))
	dir := t.TempDir()
	p := &prunable{c: c, url: url, file: filepath.Join(dir, "checkpoints"), early: filepath.Join(dir, "early"), oldAt: time.Now().UTC().AddDate(-2, 0, 0).Truncate(time.Second), dir: dir}
	c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = p.file
	st := testdb.OpenAsIs(t, url)
	st.SetChainSigner(ringOf(t, c))
	ctx := context.Background()
	record := func(at time.Time, i int) {
		e := domain.AuditEvent{ID: domain.NewID(), At: at, ActorUserID: testStaff, Action: "test.prune", TargetID: string(testPrincipal(i % 7)),
			Outcome: "granted", Detail: fmt.Sprintf("event %d", i)}
		if err := st.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for i := range pruneOld {
		record(p.oldAt.Add(time.Duration(i)*time.Minute), i)
		if i == 19 {
			signCheckpoint(t, c, p.early)
		}
	}
	for i := range pruneFresh {
		record(time.Now(), pruneOld+i)
	}
	st.Close()
	cp := signCheckpoint(t, c, p.file)
	p.head = cp.Seq
	p.first = p.head - pruneOld - pruneFresh + 1
	return p
}

// oldSeq is the seq of old event i.
func (p *prunable) oldSeq(i int) int64 { return p.first + int64(i) }

// mustPrune prunes below seq below into the archive name, failing the test on an error.
func (p *prunable) mustPrune(t *testing.T, name string, below int64) {
	t.Helper()
	if out, errOut, err := p.prune(name, "--before", fmt.Sprint(below)); err != nil {
		t.Fatalf("prune: %v\n%s%s", err, out, errOut)
	}
}

// prune runs audit prune with args, an archive in the test's folder named name.
func (p *prunable) prune(name string, args ...string) (string, string, error) {
	return p.c.run(append([]string{"audit", "prune", "--archive", filepath.Join(p.dir, name)}, args...)...)
}

// A prune below a time archives the events before it, removes them under a signed record, and
// audit verify then says the trail is intact and pruned by policy below the first kept; pruning
// below the same seq again has nothing to do.
func TestAuditPruneThenVerify(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			keep := p.oldSeq(200)
			out, errOut, err := p.prune("a.zip", "--before", p.oldAt.Add(200*time.Minute).Format(time.RFC3339))
			if err != nil {
				t.Fatalf("prune: %v\n%s%s", err, out, errOut)
			}
			if want := fmt.Sprintf("pruned by policy below seq %d: events seq 1-%d archived", keep, keep-1); !strings.Contains(out, want) {
				t.Fatalf("prune said %q, want %q", out, want)
			}
			var n int64
			if err := testdb.SQL(t, p.url).QueryRow(fmt.Sprintf(`SELECT count(*) FROM audit_events WHERE seq < %d`, keep)).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d events below seq %d after the prune (%v)", n, keep, err)
			}
			out = wantVerify(t, p.c, nil, fmt.Sprintf("pruned by policy below %d", keep))
			if !strings.Contains(out, fmt.Sprintf("intact: %d events (seq %d-%d)", p.head-keep+1, keep, p.head)) {
				t.Errorf("verify:\n%s", out)
			}
			notes := readFile(t, p.file+prunedNotesSuffix)
			pn, err := checkpoint.ParsePrune([]byte(notes[:len(notes)-1]))
			if err != nil || pn.Below != keep {
				t.Fatalf("the prune note beside the checkpoints: %v %+v\n%s", err, pn, notes)
			}
			b, err := os.ReadFile(filepath.Join(p.dir, "a.zip"))
			if err != nil {
				t.Fatal(err)
			}
			keys, _ := ringPublicKeys(ringOf(t, p.c))
			if n, err := checkPruneArchive(bytes.NewReader(b), int64(len(b)), keys, 1, keep); err != nil || n != keep-1 {
				t.Fatalf("the archive checks %d events: %v", n, err)
			}
			out, _, err = p.prune("b.zip", "--before", fmt.Sprint(keep))
			if err != nil || !strings.Contains(out, "nothing to prune") {
				t.Fatalf("prune again: %v %q", err, out)
			}
			if _, err := os.Stat(filepath.Join(p.dir, "b.zip")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("nothing to prune wrote an archive: %v", err)
			}
			// A second prune carries on from the first.
			keep2 := p.oldSeq(250)
			if out, errOut, err := p.prune("c.zip", "--before", fmt.Sprint(keep2)); err != nil {
				t.Fatalf("second prune: %v\n%s%s", err, out, errOut)
			}
			wantVerify(t, p.c, nil, fmt.Sprintf("pruned by policy below %d", keep2))
			// From a trusted checkpoint whose events were pruned since: the walk starts at the prune.
			out = wantVerify(t, p.c, nil, fmt.Sprintf("intact after the trusted checkpoint: seq %d-%d proved", keep2, p.head), "--from-checkpoint", p.early)
			if !strings.Contains(out, fmt.Sprintf("pruned by policy below %d", keep2)) || !strings.Contains(out, fmt.Sprintf("pruned: seq %d-%d, after the trusted checkpoint", p.oldSeq(20), keep2-1)) {
				t.Errorf("verify from a pruned checkpoint:\n%s", out)
			}
			b, _ = os.ReadFile(filepath.Join(p.dir, "c.zip"))
			if n, err := checkPruneArchive(bytes.NewReader(b), int64(len(b)), keys, keep, keep2); err != nil || n != keep2-keep {
				t.Fatalf("the second archive checks %d events: %v", n, err)
			}
		})
	}
}

// trailState is what a prune changes: the events left, the prune records, and the seq the trail
// starts at.
type trailState struct {
	events, prunes, first int64
}

func stateOf(t *testing.T, url string) trailState {
	t.Helper()
	db := testdb.SQL(t, url)
	var s trailState
	if err := db.QueryRow(`SELECT count(*), coalesce(min(seq), 0) FROM audit_events`).Scan(&s.events, &s.first); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM audit_prune`).Scan(&s.prunes); err != nil {
		t.Fatal(err)
	}
	return s
}

// Each refusal changes nothing, writes no archive, and says why: no archive, events within the
// retention policy, a seq no checkpoint covers, a trail that does not verify, no checkpoints, an
// archive that exists; a policy under 3 months is refused as configuration.
func TestAuditPruneRefusals(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			before := stateOf(t, p.url)
			refused := func(name string, want error, words string, args ...string) {
				t.Helper()
				out, errOut, err := p.prune(name, args...)
				if !errors.Is(err, want) || !strings.Contains(out+errOut+fmt.Sprint(err), words) {
					t.Fatalf("prune %v: %v, want %v saying %q\n%s%s", args, err, want, words, out, errOut)
				}
				if got := stateOf(t, p.url); got != before {
					t.Fatalf("prune %v refused, and the trail changed: %+v, was %+v", args, got, before)
				}
				if _, err := os.Stat(filepath.Join(p.dir, name)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("prune %v refused, and wrote its archive (%v)", args, err)
				}
			}
			old := fmt.Sprint(p.oldSeq(100))
			if _, _, err := p.c.run("audit", "prune", "--before", old); !errors.Is(err, ErrUsage) || stateOf(t, p.url) != before {
				t.Fatalf("prune without --archive: %v", err)
			}
			refused("fresh.zip", errPruneRefused, "within the retention policy", "--before", fmt.Sprint(p.head))
			// Two years old, and the policy keeps 800 days.
			p.c.vars["BACKOFFICE_AUDIT_RETENTION"] = "800d"
			refused("policy.zip", errPruneRefused, "BACKOFFICE_AUDIT_RETENTION 800d", "--before", p.oldAt.Add(100*time.Minute).Format(time.RFC3339))
			p.c.vars["BACKOFFICE_AUDIT_RETENTION"] = "30d"
			refused("short.zip", errShortRetention, "shorter than 3 months", "--before", old)
			delete(p.c.vars, "BACKOFFICE_AUDIT_RETENTION")
			refused("beyond.zip", errPruneRefused, "beyond the newest signed checkpoint", "--before", fmt.Sprint(p.head+1))
			if err := os.WriteFile(filepath.Join(p.dir, "there.zip"), []byte("kept"), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := p.prune("there.zip", "--before", old); !errors.Is(err, errPruneRefused) || readFile(t, filepath.Join(p.dir, "there.zip")) != "kept" {
				t.Fatalf("prune onto an existing archive: %v", err)
			}
			file := p.c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"]
			delete(p.c.vars, "BACKOFFICE_AUDIT_CHECKPOINTS")
			refused("nocp.zip", errPruneRefused, "BACKOFFICE_AUDIT_CHECKPOINTS is not set", "--before", old)
			p.c.vars["BACKOFFICE_AUDIT_CHECKPOINTS"] = file
			// An event altered behind the service's back: nothing unverified is archived or signed.
			sqlOn(t, p.url, fmt.Sprintf(`UPDATE audit_events SET detail = 'altered' WHERE seq = %d`, p.oldSeq(3)))
			refused("broken.zip", errPruneRefused, "does not verify", "--before", old)
			// Below where the trail starts there is nothing to prune, and the break is still said.
			refused("nothing.zip", errPruneRefused, "does not verify", "--before", "1")
		})
	}
}

// A prune record the database attacker wrote, to make removed events look pruned, is a break, and
// so is removing a real prune's record or its events' rows coming back: only the note signed
// with the log's key, for exactly the seq the trail starts at, makes a trail pruned.
func TestAuditPruneForgedRecordIsBroken(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			keep := p.oldSeq(50)
			tx := func(stmts ...string) {
				t.Helper()
				sqlOn(t, p.url, stmts...)
			}
			insert := func(below int64, note string) string {
				return fmt.Sprintf(`INSERT INTO audit_prune (below, note) VALUES (%d, '%s')`, below, strings.ReplaceAll(note, "'", "''"))
			}
			forger := testdb.Ring(t, "kx")
			key, err := forger.CheckpointKey("kx")
			if err != nil {
				t.Fatal(err)
			}
			forged, err := checkpoint.SignPrune(checkpoint.Prune{Origin: checkpoint.DefaultOrigin, Below: keep, Digest: make([]byte, 32), KeyID: "k1"}, time.Now(), key)
			if err != nil {
				t.Fatal(err)
			}
			// Removed without a record: missing, as ever.
			tx(fmt.Sprintf(`DELETE FROM audit_events WHERE seq < %d`, keep))
			wantVerify(t, p.c, errAuditChainBroken, "missing")
			tx(insert(keep, "not a note"))
			wantVerify(t, p.c, errAuditChainBroken, fmt.Sprintf("the trail holds a prune record below seq %d that is not a prune note", keep))
			tx(`DELETE FROM audit_prune`, insert(keep, string(forged.Note)))
			wantVerify(t, p.c, errAuditChainBroken, `is not signed under key "k1" or any key of the ring`)
			tx(`DELETE FROM audit_prune`, insert(keep+1, string(forged.Note)))
			wantVerify(t, p.c, errAuditChainBroken, fmt.Sprintf("holds a note for seq %d", keep))
		})
	}
}

// A real prune's record removed, or its note moved to another seq, or a pruned row put back, is a
// break.
func TestAuditPruneRecordTampered(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			keep := p.oldSeq(50)
			if out, errOut, err := p.prune("a.zip", "--before", fmt.Sprint(keep)); err != nil {
				t.Fatalf("prune: %v\n%s%s", err, out, errOut)
			}
			wantVerify(t, p.c, nil, fmt.Sprintf("pruned by policy below %d", keep))
			var note string
			if err := testdb.SQL(t, p.url).QueryRow(`SELECT note FROM audit_prune`).Scan(&note); err != nil {
				t.Fatal(err)
			}
			sqlOn(t, p.url, `DELETE FROM audit_prune`)
			wantVerify(t, p.c, errAuditChainBroken, "missing")
			sqlOn(t, p.url, fmt.Sprintf(`INSERT INTO audit_prune (below, note) VALUES (%d, '%s')`, keep, note))
			wantVerify(t, p.c, nil, fmt.Sprintf("pruned by policy below %d", keep))
			// A pruned event put back (here: a kept one renumbered into the pruned range).
			sqlOn(t, p.url, fmt.Sprintf(`UPDATE audit_events SET seq = %d WHERE seq = %d`, keep-3, p.head))
			wantVerify(t, p.c, errAuditChainBroken, fmt.Sprintf("pruned below seq %d, and this event is numbered below it", keep))
		})
	}
}

// A prune killed with -9 at any point leaves the trail as it was (every event, no new record) or
// pruned with its record, never one without the other, and audit verify passes either way; a
// prune run again after the kill carries on.
func TestAuditPruneKilledLeavesOldOrNewState(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 47))
			killed, done := 0, 0
			keep := p.oldSeq(10)
			// The kills fall anywhere in a run: up to a little longer than the last run that ended
			// took, the span growing after each kill until one ends.
			span := 400 * time.Millisecond
			for i := 0; i < 16 && keep < p.oldSeq(pruneOld-1); i++ {
				before := stateOf(t, p.url)
				archive := filepath.Join(p.dir, fmt.Sprintf("kill-%d.zip", i))
				cmd, in, out := importChild(t, p.c.vars, t.TempDir(), "audit", "prune", "--before", fmt.Sprint(keep), "--archive", archive)
				in.Close()
				delay := time.Duration(rng.Int64N(int64(span)))
				start := time.Now()
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				select {
				case err := <-exited:
					if err != nil {
						t.Fatalf("prune ended with %v before its kill:\n%s", err, out)
					}
					done++
					span = time.Since(start) * 6 / 5
				case <-time.After(delay):
					cmd.Process.Kill()
					<-exited
					killed++
					span = span * 3 / 2
					settled(t, p.url)
				}
				after := stateOf(t, p.url)
				switch {
				case after == before:
					// The old state: the archive may be there, the trail is untouched.
				case after.prunes == before.prunes+1 && after.first == keep && after.events == before.events-(keep-before.first):
					keep += 1 + int64(rng.IntN(30))
				default:
					t.Fatalf("after a kill at %s: the trail is %+v, was %+v: neither the old state nor the pruned one\n%s", delay, after, before, out)
				}
				wantVerify(t, p.c, nil, "intact")
			}
			t.Logf("%d prunes killed, %d ran to their end", killed, done)
			if killed == 0 || done == 0 {
				t.Errorf("%d prunes killed, %d ran to their end: want some of each", killed, done)
			}
		})
	}
}

// The auditor's own program (docs/examples/auditcheck) checks a real archive offline, as
// docs/compliance.md says, against the prune note beside the checkpoints; an archive with one
// event changed fails; and the proof of a kept event still verifies after the prune, the program
// saying where the trail was pruned.
func TestAuditPruneArchiveChecksOffline(t *testing.T) {
	bin := buildAuditCheck(t)
	p := pruneTrail(t, "sqlite")
	keep := p.oldSeq(100)
	archive := filepath.Join(p.dir, "a.zip")
	if out, errOut, err := p.prune("a.zip", "--before", fmt.Sprint(keep)); err != nil {
		t.Fatalf("prune: %v\n%s%s", err, out, errOut)
	}
	vkey := strings.TrimSpace(p.c.mustRun("audit", "public-key", "--note"))
	notes := p.file + prunedNotesSuffix
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"-key", vkey}, args...)...).CombinedOutput()
		return string(out), err
	}
	// The command docs/compliance.md gives an auditor.
	out, err := run("-archive", archive, "-pruned", notes)
	if err != nil || !strings.Contains(out, fmt.Sprintf("pruned by policy below %d", keep)) || !strings.Contains(out, fmt.Sprintf("ok: archive: events seq 1-%d (%d)", keep-1, keep-1)) {
		t.Fatalf("auditcheck -archive: %v\n%s", err, out)
	}

	altered := filepath.Join(p.dir, "altered.zip")
	rewriteZip(t, archive, altered, func(name string, b []byte) []byte {
		if name != archiveEvents {
			return b
		}
		return bytes.Replace(b, []byte(`"detail":"event 7"`), []byte(`"detail":"event 8"`), 1)
	})
	out, err = run("-archive", altered)
	if err == nil || !strings.Contains(out, "is not its leaf in the tree: altered") {
		t.Errorf("auditcheck of an altered archive: %v\n%s", err, out)
	}
	keys, _ := ringPublicKeys(ringOf(t, p.c))
	if _, err := checkPruneArchive(bytes.NewReader(readBytes(t, altered)), int64(len(readBytes(t, altered))), keys, 1, keep); err == nil || !strings.Contains(err.Error(), "altered") {
		t.Errorf("the prune's own check of an altered archive: %v", err)
	}
	out, err = run("-archive", altered, "-pruned", notes)
	if err == nil || !strings.Contains(out, "not the") {
		t.Errorf("auditcheck of another archive than the note names: %v\n%s", err, out)
	}

	var id string
	if err := testdb.SQL(t, p.url).QueryRow(fmt.Sprintf(`SELECT id FROM audit_events WHERE seq = %d`, keep+3)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	proof := filepath.Join(p.dir, "proof.json")
	p.c.mustRun("audit", "prove", "--out", proof, id)
	out, err = run("-proof", proof, "-pruned", notes)
	if err != nil || !strings.Contains(out, "is in the tree") || !strings.Contains(out, fmt.Sprintf("pruned by policy below %d", keep)) {
		t.Errorf("auditcheck of a kept event's proof after the prune: %v\n%s", err, out)
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteZip copies the zip at from to to, each file's bytes through change.
func rewriteZip(t *testing.T, from, to string, change func(name string, b []byte) []byte) {
	t.Helper()
	r, err := zip.OpenReader(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range r.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := zipFile(w, f.Name, change(f.Name, b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// After a prune the hash tiles are all still served; an entry bundle holding a pruned leaf is not
// found (404, with the error body), never a server error. GET /v1/audit-log/pruned serves the
// newest prune note, 404 before any prune: an auditor who reads the service, not the notes file,
// checks the archive against it with the auditor's own program.
func TestAuditPruneTiles(t *testing.T) {
	p := pruneTrail(t, "sqlite")
	keep := p.oldSeq(10)
	key := strings.TrimSpace(p.c.mustRun("apikey", "create", "--user", string(testStaff)))
	st := testdb.OpenAsIs(t, p.url)
	ring := ringOf(t, p.c)
	var logs lockedBuffer
	chk, err := newCheckpointer(p.file, st, ring, newLogger(&logs, 0))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newServing(Config{}, st, ring, newLogger(&logs, 0), nil, nil, nil, chk)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if code, body, err := get(t, srv, "/v1/audit-log/pruned", "Api-Key "+key); err != nil || code != http.StatusNotFound || !strings.Contains(string(body), "never pruned") {
		t.Errorf("GET /v1/audit-log/pruned before any prune: %d %v\n%s", code, err, body)
	}
	if out, errOut, err := p.prune("a.zip", "--before", fmt.Sprint(keep)); err != nil {
		t.Fatalf("prune: %v\n%s%s", err, out, errOut)
	}
	code, served, err := get(t, srv, "/v1/audit-log/pruned", "Api-Key "+key)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/audit-log/pruned after the prune: %d %v\n%s", code, err, served)
	}
	if notes := readFile(t, p.file+prunedNotesSuffix); !strings.HasSuffix(strings.TrimRight(notes, "\n"), strings.TrimRight(string(served), "\n")) {
		t.Errorf("the served note is not the newest of the notes file:\n%s\nfile:\n%s", served, notes)
	}
	noteFile := filepath.Join(t.TempDir(), "pruned.note")
	if err := os.WriteFile(noteFile, served, 0o600); err != nil {
		t.Fatal(err)
	}
	vkey := strings.TrimSpace(p.c.mustRun("audit", "public-key", "--note"))
	out, err := exec.Command(buildAuditCheck(t), "-key", vkey, "-archive", filepath.Join(p.dir, "a.zip"), "-pruned", noteFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("pruned by policy below %d", keep)) {
		t.Errorf("auditcheck -archive -pruned with the served note: %v\n%s", err, out)
	}
	for path, want := range map[string]int{
		"/v1/audit-log/tile/0/000":       http.StatusOK,
		"/v1/audit-log/tile/1/000.p/1":   http.StatusOK,
		"/v1/audit-log/tile/entries/000": http.StatusNotFound,
	} {
		code, body, err := get(t, srv, path, "Api-Key "+key)
		if err != nil || code != want {
			t.Errorf("GET %s: %d %v, want %d\n%s", path, code, err, want, body)
		}
		if want == http.StatusNotFound && !strings.Contains(string(body), `"not_found"`) {
			t.Errorf("GET %s: the error body: %s", path, body)
		}
	}
}

// After a prune the trail goes on: serve's checkpoint signer signs the events written since, from
// its last checkpoint and from the genesis (no checkpoints file), and keys rewrap rotates the key
// over the pruned trail, which verify then calls intact and pruned.
func TestAuditPruneThenSignAndRotate(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			keep := p.oldSeq(120)
			if out, errOut, err := p.prune("a.zip", "--before", fmt.Sprint(keep)); err != nil {
				t.Fatalf("prune: %v\n%s%s", err, out, errOut)
			}
			p.c.mustRun("apikey", "create", "--user", string(testStaff))
			if cp := signCheckpoint(t, p.c, p.file); cp.Seq != p.head+1 {
				t.Fatalf("the checkpoint after the prune covers %d events, want %d", cp.Seq, p.head+1)
			}
			st := testdb.OpenAsIs(t, p.url)
			var logs lockedBuffer
			chk, err := newCheckpointer("", st, ringOf(t, p.c), newLogger(&logs, 0))
			if err != nil {
				t.Fatal(err)
			}
			if err := chk.sign(context.Background()); err != nil {
				t.Fatalf("a signer walking from the genesis over the pruned trail: %v", err)
			}
			p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
			if out, errOut, err := p.c.run("keys", "rewrap"); err != nil {
				t.Fatalf("keys rewrap over a pruned trail: %v\n%s%s", err, out, errOut)
			}
			signCheckpoint(t, p.c, p.file)
			wantVerify(t, p.c, nil, fmt.Sprintf("pruned by policy below %d", keep))
		})
	}
}

// settled waits until the killed process's PostgreSQL backends have ended (a backend sees its
// client gone at its next read, and rolls back what it had not committed), so that the state read
// next is the one the kill left.
func settled(t *testing.T, url string) {
	t.Helper()
	if !strings.HasPrefix(url, "postgres") {
		return
	}
	db := testdb.SQL(t, url)
	for range 200 {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("the killed prune's backends are still busy")
}

// An object's complete history over a pruned trail: the auditor's program, told of the prune,
// checks it from the first entry bundle with no pruned leaf and says from which seq on it is
// complete; without the prune note it cannot read the pruned bundles and fails.
func TestAuditPruneCompleteHistory(t *testing.T) {
	bin := buildAuditCheck(t)
	p := pruneTrail(t, "sqlite")
	keep := p.oldSeq(100)
	if out, errOut, err := p.prune("a.zip", "--before", fmt.Sprint(keep)); err != nil {
		t.Fatalf("prune: %v\n%s%s", err, out, errOut)
	}
	hc := newHistoryChecker(t, bin, p.c, p.url, p.file)
	h := proveHistory(t, p.c, string(testPrincipal(3)))
	out, err := hc.run(h)
	hc.wantFailed("a complete history over a pruned trail, not told of the prune", out, err, "404")
	out, err = hc.run(h, "-pruned", p.file+prunedNotesSuffix)
	first := (keep-1+255)/256*256 + 1
	if err != nil || !strings.Contains(out, fmt.Sprintf("ok: complete from seq %d on (pruned by policy below %d", first, keep)) {
		t.Fatalf("a complete history over a pruned trail: %v\n%s", err, out)
	}
}

// The newest prune's note is checked under its key: keys status says the key is needed while
// that prune is the newest (never "it can be removed"), and a ring without it is refused where a
// ring that cannot continue the trail is, naming the note, instead of serve starting over a trail
// audit verify then calls broken.
func TestThePruneKeyIsNeeded(t *testing.T) {
	p := pruneTrail(t, "sqlite")
	p.mustPrune(t, "a.zip", p.oldSeq(100))
	p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
	out, _, _ := p.c.run("keys", "status")
	if !strings.Contains(out, "newest prune note is signed under key k1") || strings.Contains(out, "Nothing needs key k1") {
		t.Errorf("keys status after a rotation, the newest prune under k1:\n%s", out)
	}
	st := testdb.OpenAsIs(t, p.url)
	ring, err := masterRing(Config{MasterKeys: secret(ringSpec("k2"))})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRingHolds(context.Background(), st, ring, true); err == nil || !strings.Contains(err.Error(), "the newest prune's note") {
		t.Errorf("a ring without the prune's key: %v, want refused naming the prune's note", err)
	}
}

// keys rewrap signs the newest prune's note anew under the active key, into the trail and the
// notes file: the old key is then needed by nothing, leaves the ring, and the trail still
// verifies as pruned by policy; the notes file's newest note holds under the new key alone. A prune note forged under the old key after that (a leaked old key and the database,
// cutting the newest events off) is a break.
func TestRewrapSignsTheNewestPruneAnew(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			keep := p.oldSeq(100)
			p.mustPrune(t, "a.zip", keep)
			p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
			p.c.mustRun("keys", "rewrap")
			signCheckpoint(t, p.c, p.file) // the newest checkpoint under k2, as serve signs it
			if out := p.c.mustRun("keys", "status"); !strings.Contains(out, "Nothing needs key k1") {
				t.Fatalf("keys status after the rewrap:\n%s", out)
			}
			p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")
			wantVerify(t, p.c, nil, fmt.Sprintf("pruned by policy below %d", keep), "--checkpoints", p.file)
			wantNewestNoteUnder(t, p.file+prunedNotesSuffix, "k2", keep)

			forgePruneUnder(t, p.url, "k1", p.head)
			wantVerify(t, p.c, errAuditChainBroken, `is not signed under key "k1" or any key of the ring`)
		})
	}
}

// forgePruneUnder prunes the trail at url below seq below under a note signed with key id's
// checkpoint key, planned with a ring that holds every key the trail uses: a database attacker
// holding that key, at their best.
func forgePruneUnder(t *testing.T, url, id string, below int64) {
	t.Helper()
	ctx := context.Background()
	all, err := masterRing(Config{MasterKeys: secret(ringSpec("k2", "k1"))})
	if err != nil {
		t.Fatal(err)
	}
	st := testdb.OpenAsIs(t, url)
	defer st.Close()
	plan, _, err := st.PlanAuditPrune(ctx, all, below, nil)
	if err != nil {
		t.Fatalf("plan the forged prune: %v", err)
	}
	key, err := all.CheckpointKey(id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := checkpoint.SignPrune(checkpoint.Prune{Origin: checkpoint.DefaultOrigin, Below: plan.Below, Root: plan.Root, Link: plan.Link,
		Digest: plan.Digest, KeyID: id}, time.Now(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PruneAudit(ctx, plan, p); err != nil {
		t.Fatalf("the forged prune: %v", err)
	}
}

// wantNewestNoteUnder checks that the newest note of the prune notes file at path, where the
// auditor's program reads it, is the prune below seq below signed under key id.
func wantNewestNoteUnder(t *testing.T, path, id string, below int64) {
	t.Helper()
	notes := readFile(t, path)
	at := strings.LastIndex(notes, "\n"+checkpoint.PruneLabel+"\n")
	start := strings.LastIndex(notes[:max(at, 0)], "\n") + 1
	p, err := checkpoint.ParsePrune([]byte(strings.TrimRight(notes[start:], "\n") + "\n"))
	if at < 0 || err != nil {
		t.Fatalf("the newest note of %s: %v\n%s", path, err, notes)
	}
	ring, err := masterRing(Config{MasterKeys: secret(ringSpec(id))})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ring.CheckpointPublicKey(id)
	if err != nil {
		t.Fatal(err)
	}
	if p.Below != below || p.KeyID != id || !p.SignedBy(pub) {
		t.Fatalf("the newest note of %s: below %d under %s (signed under %s: %v), want below %d under %s", path, p.Below, p.KeyID, id, p.SignedBy(pub), below, id)
	}
}

// A prune note the notes file does not hold is never signed anew: one written into the database
// before the rotation by whoever held the old key (a suspected compromise is why keys rotate)
// stays under that key. keys rewrap moves the SSNs and then says so (exit 3); keys status keeps
// the old key needed; without it, the forged prune is a break.
func TestRewrapSignsNoPruneTheNotesFileLacks(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			p.mustPrune(t, "a.zip", p.oldSeq(100))
			p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
			forgePruneUnder(t, p.url, "k1", p.head)
			before := readFile(t, p.file+prunedNotesSuffix)
			out, errOut, err := p.c.run("keys", "rewrap")
			if !errors.Is(err, ErrCannotCheck) || !strings.Contains(errOut+err.Error(), "does not hold it") {
				t.Fatalf("keys rewrap over a prune note the notes file lacks: %v, want CANNOT CHECK\n%s%s", err, out, errOut)
			}
			if after := readFile(t, p.file+prunedNotesSuffix); after != before {
				t.Errorf("the notes file changed:\n%s", after)
			}
			signCheckpoint(t, p.c, p.file)
			if out := p.c.mustRun("keys", "status"); !strings.Contains(out, "newest prune note is signed under key k1") {
				t.Errorf("keys status after the refused re-signing:\n%s", out)
			}
			p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2")
			wantVerify(t, p.c, errAuditChainBroken, `is not signed under key "k1" or any key of the ring`, "--checkpoints", p.file)
		})
	}
}

// keys rewrap racing a prune: the walk checked the prune below N, another prune below M ran
// since; nothing is signed anew, and the notes file's newest note stays M's, which the auditor's
// program reads as the trail's newest prune.
func TestRewrapRacingAPruneLeavesItsNoteTheNewest(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			p := pruneTrail(t, engine)
			p.mustPrune(t, "a.zip", p.oldSeq(100))
			p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
			cfg, err := loadConfig(func(k string) string { return p.c.vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			ring, err := masterRing(cfg)
			if err != nil {
				t.Fatal(err)
			}
			st := testdb.OpenAsIs(t, p.url)
			defer st.Close()
			ctx := context.Background()
			v, _, err := verifyBeforeAnchor(ctx, cfg, st, ring) // the rewrap's walk
			if err != nil {
				t.Fatal(err)
			}
			keep2 := p.oldSeq(200) // a prune, meanwhile, under the new key
			p.mustPrune(t, "b.zip", keep2)
			if err := resignPrune(ctx, cfg, st, ring, v, time.Now()); err == nil || !strings.Contains(err.Error(), "nothing was signed anew") {
				t.Errorf("signing anew a prune since superseded: %v", err)
			}
			wantNewestNoteUnder(t, p.file+prunedNotesSuffix, "k2", keep2)
		})
	}
}

// After a rotation the auditor's program checks an archive under the key its checkpoint was
// signed with and the newest prune note, signed anew, under the new key (-pruned-key).
func TestAuditCheckAnArchiveAfterARotation(t *testing.T) {
	bin := buildAuditCheck(t)
	p := pruneTrail(t, "sqlite")
	keep := p.oldSeq(100)
	archive := filepath.Join(p.dir, "a.zip")
	p.mustPrune(t, "a.zip", keep)
	notes := p.file + prunedNotesSuffix
	k1 := strings.TrimSpace(p.c.mustRun("audit", "public-key", "--note", "--key-id", "k1"))
	p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
	k2 := strings.TrimSpace(p.c.mustRun("audit", "public-key", "--note", "--key-id", "k2"))
	p.c.mustRun("keys", "rewrap")
	out, err := exec.Command(bin, "-key", k1, "-archive", archive, "-pruned", notes).CombinedOutput()
	if err == nil {
		t.Errorf("the newest prune note, signed anew under k2, checked under k1:\n%s", out)
	}
	out, err = exec.Command(bin, "-key", k1, "-archive", archive, "-pruned", notes, "-pruned-key", k2).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("pruned by policy below %d", keep)) || !strings.Contains(string(out), "ok: archive") {
		t.Fatalf("the archive under k1, the prune note under k2: %v\n%s", err, out)
	}
}

// A rewrap cut short after the database took the prune's note signed anew, before the notes file
// did: the next run appends it there.
func TestRewrapAgainAppendsTheNoteSignedAnew(t *testing.T) {
	p := pruneTrail(t, "sqlite")
	keep := p.oldSeq(100)
	p.mustPrune(t, "a.zip", keep)
	notes := p.file + prunedNotesSuffix
	before := readFile(t, notes)
	p.c.vars["BACKOFFICE_MASTER_KEYS"] = ringSpec("k2", "k1")
	p.c.mustRun("keys", "rewrap")
	if err := os.WriteFile(notes, []byte(before), 0o600); err != nil { // as if cut short
		t.Fatal(err)
	}
	p.c.mustRun("keys", "rewrap")
	wantNewestNoteUnder(t, notes, "k2", keep)
}
