package app

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"backoffice/internal/auditlog"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// The database attacker against the audit writer (docs/compliance.md, "Attacks on the writer"):
// something in the database that drops, deletes, alters or hides a decrypt's event while the
// decrypt is served. Each attack is set up under a running service whose start found the trail's
// tables as the migrations made them, three decrypts go through the real router, the attack is
// taken away, one more decrypt is asked for, and then the checkpoint signer ticks and the trail is
// counted and verified.
//
// An attack the append's own check of the trail's catalog finds (held: trailguard.go; on SQLite
// every change of the trail's catalog, on PostgreSQL a view in the table's place and a replaced
// writer's function) answers those decrypts 503, no SSN, and holds the trail: the decrypt after
// the attack is taken away is refused too, nothing more is signed, and the log names what was
// found. One the writer's read-back catches (caught: PostgreSQL's triggers, rules and policies)
// answers them 503 and logs which event did not land; the trail is not held, and the decrypt
// after is served and signed. Either way the SSNs served equal the granted events in the trail.
//
// What no write path can stop is a row deleted after its decrypt was answered: the signer's
// memory of this process's commits (CommitMemory) names its seq and signs nothing over it (audit
// verify on the database alone finds the trail whole: the next append linked over the gap).

// writerAttack is one attack: setup and teardown statements, and after, run after each decrypt
// answered 200 while the attack is on.
type writerAttack struct {
	name            string
	setup, teardown []string
	after           []string
	// caught: the read-back catches it (no SSN without its event); held: the append's check of
	// the trail's catalog does, and holds the trail; otherwise the signer does.
	caught, held bool
	// found is what the held trail names.
	found string
	// restricted: the service connects as a role that is not a superuser, for whom row level
	// security holds (PostgreSQL).
	restricted bool
	// refusal is what the log says of a refused decrypt's audit ("did not land as written, so
	// none was committed: seq N …" when empty); status is its answer (503 when 0).
	refusal string
	status  int
}

const decryptOnly = `NEW.action = 'principal.decrypt'`

// auditColumnList are audit_events' columns, for the views in its place.
const auditColumnList = auditlog.Columns

func writerAttacks(engine string) []writerAttack {
	// The attacker deletes the event's leaf from the tree too (the rows its append added, from its
	// level-0 row, the newest with a subject tag), or the next append would not link over the gap.
	deleteAfter := writerAttack{name: "row deleted after its decrypt answered, the gap closed by the next append",
		after: []string{`DELETE FROM audit_events WHERE seq = (SELECT max(seq) FROM audit_events)`,
			`DELETE FROM audit_tree WHERE id >= (SELECT max(id) FROM audit_tree WHERE subject_tag IS NOT NULL)`}}
	if engine == "sqlite" {
		return []writerAttack{
			{name: "BEFORE INSERT trigger, RAISE(IGNORE)", held: true, found: "found: trigger zz on audit_events",
				setup:    []string{`CREATE TRIGGER zz BEFORE INSERT ON audit_events WHEN ` + decryptOnly + ` BEGIN SELECT RAISE(IGNORE); END`},
				teardown: []string{`DROP TRIGGER zz`}},
			{name: "AFTER INSERT trigger deletes it", held: true, found: "found: trigger zz on audit_events",
				setup:    []string{`CREATE TRIGGER zz AFTER INSERT ON audit_events WHEN ` + decryptOnly + ` BEGIN DELETE FROM audit_events WHERE seq = NEW.seq; END`},
				teardown: []string{`DROP TRIGGER zz`}},
			{name: "AFTER INSERT trigger makes it denied", held: true, found: "found: trigger zz on audit_events",
				setup:    []string{`CREATE TRIGGER zz AFTER INSERT ON audit_events WHEN ` + decryptOnly + ` BEGIN UPDATE audit_events SET outcome = 'denied' WHERE seq = NEW.seq; END`},
				teardown: []string{`DROP TRIGGER zz`}},
			{name: "AFTER INSERT trigger renumbers it", held: true, found: "found: trigger zz on audit_events",
				setup:    []string{`CREATE TRIGGER zz AFTER INSERT ON audit_events WHEN ` + decryptOnly + ` BEGIN UPDATE audit_events SET seq = seq + 1000000 WHERE seq = NEW.seq; END`},
				teardown: []string{`DROP TRIGGER zz`, `DELETE FROM audit_events WHERE seq > 1000000`}},
			{name: "view in its place, INSTEAD OF INSERT drops it", held: true, found: "audit_events is a view, not a table",
				setup: []string{
					`ALTER TABLE audit_events RENAME TO audit_events_real`,
					`CREATE VIEW audit_events AS SELECT * FROM audit_events_real`,
					`CREATE TRIGGER zz INSTEAD OF INSERT ON audit_events WHEN NOT ` + decryptOnly + ` BEGIN
						INSERT INTO audit_events_real (` + auditColumnList + `) VALUES (NEW.id, NEW.at, NEW.actor_user_id, NEW.action, NEW.target_id, NEW.outcome, NEW.detail, NEW.seq, NEW.chain_key_id, NEW.hash); END`},
				teardown: []string{`DROP VIEW audit_events`, `ALTER TABLE audit_events_real RENAME TO audit_events`}},
			{name: "view in its place shows each decrypt until the next", held: true, found: "audit_events is a view, not a table",
				setup: []string{
					`ALTER TABLE audit_events RENAME TO audit_events_real`,
					`CREATE TABLE audit_side AS SELECT * FROM audit_events_real WHERE 0`,
					`CREATE VIEW audit_events AS SELECT * FROM audit_events_real UNION ALL SELECT * FROM audit_side`,
					`CREATE TRIGGER zz INSTEAD OF INSERT ON audit_events BEGIN
						DELETE FROM audit_side WHERE ` + decryptOnly + `;
						INSERT INTO audit_side (` + auditColumnList + `) SELECT NEW.id, NEW.at, NEW.actor_user_id, NEW.action, NEW.target_id, NEW.outcome, NEW.detail, NEW.seq, NEW.chain_key_id, NEW.hash WHERE ` + decryptOnly + `;
						INSERT INTO audit_events_real (` + auditColumnList + `) SELECT NEW.id, NEW.at, NEW.actor_user_id, NEW.action, NEW.target_id, NEW.outcome, NEW.detail, NEW.seq, NEW.chain_key_id, NEW.hash WHERE NOT ` + decryptOnly + `; END`},
				teardown: []string{`DROP VIEW audit_events`, `DROP TABLE audit_side`, `ALTER TABLE audit_events_real RENAME TO audit_events`}},
			deleteAfter,
		}
	}
	trigger := func(name, when, body string, extra ...string) writerAttack {
		return writerAttack{name: name, caught: true,
			setup: append([]string{`CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ` + body + ` END $$`,
				`CREATE ` + when + ` EXECUTE FUNCTION zz()`}, extra...),
			teardown: []string{`DROP FUNCTION zz() CASCADE`}}
	}
	rls := func(name, hides, refusal string, status int) writerAttack {
		return writerAttack{name: name, caught: true, restricted: true, refusal: refusal, status: status,
			setup: []string{`ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY`, `ALTER TABLE audit_events FORCE ROW LEVEL SECURITY`,
				`CREATE POLICY zz_write ON audit_events FOR INSERT WITH CHECK (true)`,
				`CREATE POLICY zz_read ON audit_events FOR SELECT USING (` + hides + `)`},
			teardown: []string{`DROP POLICY zz_write ON audit_events`, `DROP POLICY zz_read ON audit_events`,
				`ALTER TABLE audit_events NO FORCE ROW LEVEL SECURITY`, `ALTER TABLE audit_events DISABLE ROW LEVEL SECURITY`}}
	}
	return []writerAttack{
		trigger("BEFORE INSERT trigger returns NULL", `TRIGGER zz BEFORE INSERT ON audit_events FOR EACH ROW WHEN (`+decryptOnly+`)`, `RETURN NULL;`),
		trigger("AFTER INSERT trigger deletes it", `TRIGGER zz AFTER INSERT ON audit_events FOR EACH ROW WHEN (`+decryptOnly+`)`,
			`DELETE FROM audit_events WHERE seq = NEW.seq; RETURN NULL;`),
		trigger("AFTER INSERT trigger makes it denied", `TRIGGER zz AFTER INSERT ON audit_events FOR EACH ROW WHEN (`+decryptOnly+`)`,
			`UPDATE audit_events SET outcome = 'denied' WHERE seq = NEW.seq; RETURN NULL;`),
		trigger("AFTER INSERT statement trigger deletes the decrypts", `TRIGGER zz AFTER INSERT ON audit_events REFERENCING NEW TABLE AS written FOR EACH STATEMENT`,
			`DELETE FROM audit_events WHERE seq IN (SELECT seq FROM written WHERE action = 'principal.decrypt'); RETURN NULL;`),
		trigger("constraint trigger deferred to the commit deletes it",
			`CONSTRAINT TRIGGER zz AFTER INSERT ON audit_events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (`+decryptOnly+`)`,
			`DELETE FROM audit_events WHERE seq = NEW.seq; RETURN NULL;`),
		{name: "rule DO INSTEAD NOTHING", caught: true,
			setup:    []string{`CREATE RULE zz AS ON INSERT TO audit_events WHERE ` + decryptOnly + ` DO INSTEAD NOTHING`},
			teardown: []string{`DROP RULE zz ON audit_events`}},
		{name: "rule DO ALSO DELETE", caught: true,
			setup:    []string{`CREATE RULE zz AS ON INSERT TO audit_events WHERE ` + decryptOnly + ` DO ALSO DELETE FROM audit_events WHERE seq = NEW.seq`},
			teardown: []string{`DROP RULE zz ON audit_events`}},
		rls("row level security hides new decrypts from the service", `action <> 'principal.decrypt' OR seq < 2`, "", 0), // seq 1: the decrypt before the attack
		// The head the writer reads is the one before the hidden decrypt, and the tree holds that
		// decrypt's leaf: the append is refused before it is tried.
		rls("row level security hides every decrypt, the chain's head too", `action <> 'principal.decrypt'`,
			"the audit tree does not match the trail", 0),
		{name: "view in its place, INSTEAD OF INSERT drops it", held: true, found: "audit_events is a view, not a table",
			setup: []string{
				`ALTER TABLE audit_events RENAME TO audit_events_real`,
				`CREATE VIEW audit_events AS SELECT * FROM audit_events_real`,
				`CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
					IF NOT ` + decryptOnly + ` THEN INSERT INTO audit_events_real SELECT NEW.*; END IF; RETURN NEW; END $$`,
				`CREATE TRIGGER zz INSTEAD OF INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION zz()`},
			teardown: []string{`DROP VIEW audit_events`, `DROP FUNCTION zz()`, `ALTER TABLE audit_events_real RENAME TO audit_events`}},
		{name: "view in its place shows a decrypt to its own transaction only", held: true, found: "audit_events is a view, not a table",
			setup: []string{
				`ALTER TABLE audit_events RENAME TO audit_events_real`,
				`CREATE TABLE audit_side AS SELECT *, NULL::xid8 AS xid FROM audit_events_real WHERE false`,
				`CREATE VIEW audit_events AS SELECT * FROM audit_events_real
					UNION ALL SELECT ` + auditColumnList + ` FROM audit_side WHERE xid = pg_current_xact_id_if_assigned()`,
				`CREATE FUNCTION zz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
					IF ` + decryptOnly + ` THEN INSERT INTO audit_side SELECT NEW.*, pg_current_xact_id();
					ELSE INSERT INTO audit_events_real SELECT NEW.*; END IF; RETURN NEW; END $$`,
				`CREATE TRIGGER zz INSTEAD OF INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION zz()`},
			teardown: []string{`DROP VIEW audit_events`, `DROP FUNCTION zz()`, `DROP TABLE audit_side`, `ALTER TABLE audit_events_real RENAME TO audit_events`}},
		{name: "the writer's append function replaced by one that writes nothing", held: true,
			found: "changed: function audit_chain_append_tree(",
			setup: []string{`CREATE OR REPLACE FUNCTION audit_chain_append_tree(prev_seq BIGINT, prev_hash BYTEA,
				ids TEXT[], ats BIGINT[], actors TEXT[], actions TEXT[], targets TEXT[], outcomes TEXT[],
				details TEXT[], seqs BIGINT[], key_ids TEXT[], hashes BYTEA[],
				tree_ids BIGINT[], tree_hashes BYTEA[], tree_tags BYTEA[], edge_ids BIGINT[], edge_hashes BYTEA[]) RETURNS BIGINT
				LANGUAGE sql AS $$ SELECT cardinality(ids)::bigint $$`},
			teardown: []string{`DROP FUNCTION audit_chain_append_tree`, appendTreeFunction()}},
		deleteAfter,
	}
}

// appendTreeFunction is the migration's statement that makes audit_chain_append_tree, to put it
// back (the migration also makes the tree's table).
func appendTreeFunction() string {
	b, err := os.ReadFile("../store/postgres/migrations/0020_audit_tree.sql")
	if err != nil {
		panic(err)
	}
	_, fn, ok := strings.Cut(string(b), "CREATE FUNCTION audit_chain_append_tree(")
	if !ok {
		panic("0020_audit_tree.sql makes no audit_chain_append_tree")
	}
	return "CREATE FUNCTION audit_chain_append_tree(" + fn
}

func TestDecryptsUnderAttacksOnTheWriter(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, a := range writerAttacks(engine) {
			t.Run(engine+"/"+a.name, func(t *testing.T) { runWriterAttack(t, engine, a) })
		}
	}
}

var notSignedSeqRe = regexp.MustCompile(`"msg":"audit checkpoint not signed","error":"[^"]*audit chain broken at seq (\d+)`)

func runWriterAttack(t *testing.T, engine string, a writerAttack) {
	ctx := context.Background()
	dbURL := testdb.URL(t, engine)
	ring := testdb.Ring(t)
	owner := testdb.OpenURL(t, dbURL)
	importDataset(t, owner, testDataset(4), ring)
	st := owner
	if a.restricted {
		st = testdb.OpenURL(t, restrictedRole(t, dbURL))
	}
	srv, logs := serveAPI(t, st, ring)
	var cpLogs lockedBuffer
	cp, err := newCheckpointer(filepath.Join(t.TempDir(), "checkpoints.jsonl"), st, ring, newLogger(&cpLogs, 0))
	if err != nil {
		t.Fatal(err)
	}

	served := 0
	decrypt := func(i int) int {
		t.Helper()
		status, body, err := get(t, srv, decryptPath(testPrincipal(i)), "Api-Key "+testStaffKey)
		if err != nil {
			t.Fatal(err)
		}
		switch status {
		case http.StatusOK:
			var got struct{ SSN string }
			if err := json.Unmarshal(body, &got); err != nil || got.SSN != testSSN(i) {
				t.Fatalf("decrypt %d: 200 %s", i, body)
			}
			served++
		case cmp.Or(a.status, http.StatusServiceUnavailable):
			if code := errorCode(t, body); (code != "unavailable" && a.status == 0) || strings.Contains(string(body), testSSN(i)) {
				t.Fatalf("decrypt %d: %d %s", i, status, body)
			}
		default:
			t.Fatalf("decrypt %d: %d %s\n%s", i, status, body, logs.String())
		}
		return status
	}
	decrypt(0)
	cp.tick(ctx)
	if cp.signed == 0 {
		t.Fatalf("nothing signed before the attack:\n%s", cpLogs.String())
	}
	sqlOn(t, dbURL, a.setup...)
	var refused int
	for i := 1; i <= 3; i++ {
		if decrypt(i) == http.StatusOK {
			sqlOn(t, dbURL, a.after...)
		} else {
			refused++
		}
	}
	sqlOn(t, dbURL, a.teardown...)
	if after := decrypt(0); a.held != (after != http.StatusOK) {
		t.Fatalf("a decrypt after the attack was taken away: %d (held: %v)\n%s", after, a.held, logs.String())
	}
	cp.tick(ctx)

	granted := column[int64](t, testdb.SQL(t, dbURL), `SELECT count(*) FROM audit_events WHERE action = 'principal.decrypt' AND outcome = 'granted'`)[0]
	rep, err := owner.VerifyAuditChain(ctx, ring, nil)
	if err != nil {
		t.Fatal(err)
	}
	head := column[int64](t, testdb.SQL(t, dbURL), `SELECT max(seq) FROM audit_events`)[0]
	t.Logf("served %d SSNs, %d refused; %d granted events; verify: %v; signed seq %d of %d", served, refused, granted, rep.Break, cp.signed, head)
	if a.held {
		heldTrail(t, st, a, served, refused, granted, rep, logs.String(), cpLogs.String())
		if status, body, err := get(t, srv, "/readyz", ""); err != nil || status != http.StatusServiceUnavailable {
			t.Errorf("/readyz over the held trail: %d %s %v", status, body, err)
		}
		if cp.signed != 1 {
			t.Errorf("the signer signed seq %d over the held trail, want the baseline's 1", cp.signed)
		}
		return
	}
	if a.caught {
		if int64(served) != granted {
			t.Errorf("%d SSNs served, %d granted decrypt events in the trail", served, granted)
		}
		if refused != 3 {
			t.Errorf("%d of the 3 decrypts under the attack refused, want all", refused)
		}
		if !strings.Contains(logs.String(), cmp.Or(a.refusal, "did not land as written, so none was committed: seq ")) {
			t.Errorf("no log line says which event did not land:\n%s", logs.String())
		}
		if rep.Break != nil || rep.Unchecked != nil {
			t.Errorf("the trail does not verify: %v %v", rep.Break, rep.Unchecked)
		}
		if cp.signed != head {
			t.Errorf("the signer signed seq %d, the trail ends at %d:\n%s", cp.signed, head, cpLogs.String())
		}
		return
	}
	// Fooled the read-back: SSNs went out without their events. Nothing is signed over the gap,
	// and the signer names its seq; the trail does not verify.
	if int64(served) <= granted {
		t.Errorf("%d SSNs served, %d granted decrypt events: the attack did not fool the read-back", served, granted)
	}
	// The database alone does not show it (audit verify finds the trail intact): the chain
	// links over the gap.
	// The first decrypt under the attack was numbered after the baseline's event, and so was the
	// decrypt after it, linked over the gap: the trail's last event.
	if cp.signed >= head {
		t.Errorf("the signer signed seq %d, over the gap at seq %d", cp.signed, head)
	}
	m := notSignedSeqRe.FindStringSubmatch(cpLogs.String())
	if m == nil || m[1] != fmt.Sprint(head) {
		t.Errorf("the signer's error does not name seq %d:\n%s", head, cpLogs.String())
	}
}

// heldTrail checks a trail the append's own catalog check held under the attack a: no SSN
// without its event, every decrypt under the attack refused, the trail whole, the finding named
// in the store's held error, in the refused decrypt's log line and in the signer's.
func heldTrail(t *testing.T, st *store.Store, a writerAttack, served, refused int, granted int64, rep auditlog.ChainReport, logs, cpLogs string) {
	t.Helper()
	if int64(served) != granted {
		t.Errorf("%d SSNs served, %d granted decrypt events in the trail", served, granted)
	}
	if refused != 3 {
		t.Errorf("%d of the 3 decrypts under the attack refused, want all", refused)
	}
	if rep.Break != nil || rep.Unchecked != nil {
		t.Errorf("the trail does not verify: %v %v", rep.Break, rep.Unchecked)
	}
	held := st.TrailCatalogHeld()
	if held == nil || !strings.Contains(held.Error(), a.found) {
		t.Errorf("the trail held for %v, want %q", held, a.found)
	}
	if !strings.Contains(logs, `"level":"ERROR","msg":"request failed"`) ||
		!strings.Contains(logs, `"status":503,"code":"unavailable","cause":"the audit trail's tables are not what the migrations made: `) ||
		!strings.Contains(logs, a.found) {
		t.Errorf("no refused decrypt's log line names %q:\n%s", a.found, logs)
	}
	if !strings.Contains(cpLogs, "audit checkpoint not signed") || !strings.Contains(cpLogs, a.found) {
		t.Errorf("the signer's log does not name %q:\n%s", a.found, cpLogs)
	}
}

// restrictedRole makes a role that is no superuser (row level security holds for it), with the
// rights the service needs on dbURL's database, and returns dbURL as that role.
func restrictedRole(t *testing.T, dbURL string) string {
	t.Helper()
	role := fmt.Sprintf("bo_rls_%d", time.Now().UnixNano())
	sqlOn(t, dbURL, `CREATE ROLE `+role+` LOGIN`,
		`GRANT ALL ON SCHEMA public TO `+role, `GRANT ALL ON ALL TABLES IN SCHEMA public TO `+role,
		`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO `+role, `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO `+role)
	t.Cleanup(func() { // after the store that connects as it is closed
		db, err := sql.Open("pgx", dbURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := db.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}
