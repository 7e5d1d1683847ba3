package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"backoffice/internal/auditlog"
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
	p := &prunable{c: c, url: url, file: filepath.Join(dir, "checkpoints"), oldAt: time.Now().UTC().AddDate(-2, 0, 0).Truncate(time.Second), dir: dir}
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
			if n, err := checkPruneArchive(b, keys, 1, keep); err != nil || n != keep-1 {
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
			b, _ = os.ReadFile(filepath.Join(p.dir, "c.zip"))
			if n, err := checkPruneArchive(b, keys, keep, keep2); err != nil || n != keep2-keep {
				t.Fatalf("the second archive checks %d events: %v", n, err)
			}
		})
	}
}

var _ = auditlog.ErrNothingToPrune
