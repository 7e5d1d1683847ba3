package app

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/api"
	"backoffice/internal/auditlog"
	"backoffice/internal/checkpoint"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

func runAudit(ctx context.Context, env Env, cfg Config, args []string) error {
	return runGroup(ctx, env, cfg, "audit", args, map[string]runFunc{"list": runAuditList, "verify": runAuditVerify, "public-key": runAuditPublicKey, "prove": runAuditProve, "prune": runAuditPrune})
}

// auditFlags maps each flag of audit list to the HTTP list's query parameter, so that both read
// their filters through api.ParseAuditFilter and refuse the same values.
var auditFlags = []struct{ flag, param, usage string }{
	{"actor-user-id", "actorUserId", "only events of this user (uuid)"},
	{"target-id", "targetId", "only events about this object (uuid)"},
	{"action", "action", "only this action, exactly (principal.decrypt, merchant_document.delete, …)"},
	{"outcome", "outcome", "only this outcome: granted, denied, not_found or invalid"},
	{"from", "from", "only events at or after this RFC 3339 time"},
	{"to", "to", "only events before this RFC 3339 time"},
}

// runAuditList prints the events a filter matches, newest first. It reads the database directly,
// as an operator with shell access can, so it is not itself recorded (the HTTP list is).
func runAuditList(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("audit list")
	cfg.databaseFlags(fs)
	values := make([]*string, len(auditFlags))
	for i, f := range auditFlags {
		values[i] = fs.String(f.flag, "", f.usage)
	}
	format := fs.String("format", "table", "table, or json (one event per line)")
	limit := fs.Int64("limit", 100, "print at most this many events (0: all)")
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return usagef("--format: want table or json")
	}
	if *limit < 0 {
		return usagef("--limit: want 0 or more")
	}
	q := url.Values{}
	for i, f := range auditFlags {
		if *values[i] != "" {
			q.Set(f.param, *values[i])
		}
	}
	filter, err := api.ParseAuditFilter(q)
	if err != nil {
		return auditFlagError(err)
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	print := printAuditTable
	if *format == "json" {
		print = printAuditJSON
	}
	return listAudit(ctx, st, filter, *limit, func(events []domain.AuditEvent) error { return print(env.Stdout, events) })
}

// listAudit reads the matching events a page at a time, newest first, up to limit (0: all).
func listAudit(ctx context.Context, st *store.Store, f domain.AuditFilter, limit int64, emit func([]domain.AuditEvent) error) error {
	const size = api.MaxPageSize
	var seen int64
	for page := int64(1); ; page++ {
		events, total, err := st.ListAuditEvents(ctx, f, page, size)
		if err != nil {
			return err
		}
		if limit > 0 && seen+int64(len(events)) > limit {
			events = events[:limit-seen]
		}
		seen += int64(len(events))
		if page == 1 || len(events) > 0 {
			if err := emit(events); err != nil {
				return err
			}
		}
		if len(events) < size || seen >= total || (limit > 0 && seen >= limit) {
			return nil
		}
	}
}

// auditFlagError names the flag, not the query parameter, of a refused filter.
func auditFlagError(err error) error {
	msg := err.Error()
	if e, ok := domain.AsError(err); ok {
		msg = e.Detail
	}
	for _, f := range auditFlags {
		msg = strings.ReplaceAll(msg, f.param, "--"+f.flag)
	}
	return usagef("%s", msg)
}

func printAuditTable(w io.Writer, events []domain.AuditEvent) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tACTOR\tACTION\tTARGET\tOUTCOME\tDETAIL")
	for _, e := range events {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.At.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), e.ActorUserID,
			e.Action, orDash(e.TargetID), e.Outcome, strconv.Quote(e.Detail))
	}
	return tw.Flush()
}

func printAuditJSON(w io.Writer, events []domain.AuditEvent) error {
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

// errAuditChainBroken marks a verify that found the chain broken (exit status 1).
var errAuditChainBroken = errors.New("audit chain broken")

// ErrCannotCheck marks a verify that could neither prove the trail whole nor find it broken: a
// key or a checkpoint it needs is missing (exit status 3, see Report).
var ErrCannotCheck = errors.New("audit chain cannot be checked")

// verifyFlags are audit verify's inputs beyond the database.
type verifyFlags struct {
	head        string
	checkpoints []string
	publicKeys  []string
	export      string
	// limit limits the claim to what the keys given prove (--limit-to-keys): checkpoints under
	// other keys, and the events only they would prove, are named as not proved instead of
	// making the answer "cannot check".
	limit bool
	// from is a file holding one checkpoint the auditor trusts (--from-checkpoint): the walk
	// starts from it, and only what came after it is checked.
	from string
	// witnesses is a witness policy file (--witnesses, else BACKOFFICE_AUDIT_WITNESSES): each
	// file's newest checkpoint must carry its quorum of cosignatures.
	witnesses string
}

// listFlag is a flag.Value that may be given many times.
type listFlag struct{ dst *[]string }

func (l listFlag) String() string { return "" }
func (l listFlag) Set(v string) error {
	*l.dst = append(*l.dst, v)
	return nil
}

// runAuditVerify checks the trail: the database's chain with the master key ring, against the
// checkpoints kept outside it (BACKOFFICE_AUDIT_CHECKPOINTS and every --checkpoints file); or,
// with --export, an export against the checkpoints with public keys only, on a machine that has
// neither the master key nor the database. It exits 0 when intact, 1 when broken (naming the
// first bad seq), 3 when it cannot check, 2 on a usage error.
func runAuditVerify(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("audit verify")
	cfg.databaseFlags(fs)
	var f verifyFlags
	fs.StringVar(&f.head, "head", "", "a link (`HASH`, 64 hex digits) printed by an earlier verify: it must still be in the chain")
	fs.Var(listFlag{&f.checkpoints}, "checkpoints", "a checkpoints `FILE` serve wrote (BACKOFFICE_AUDIT_CHECKPOINTS); give one per replica")
	fs.Var(listFlag{&f.publicKeys}, "public-key", "a checkpoint public `KEY` as audit public-key prints it (KEYID:BASE64); may be repeated")
	fs.StringVar(&f.export, "export", "", "check this export `FILE` against the checkpoints, with no database and no master key")
	fs.BoolVar(&f.limit, "limit-to-keys", false, "claim only what the keys given prove: checkpoints under other keys, and events no checkpoint checked covers, are named as not proved (exit 0 covers the seqs it names)")
	fs.StringVar(&f.from, "from-checkpoint", "", "a `FILE` holding one checkpoint you trust (a signed note): check its signature and that the log's tree extends it, then walk only the events after it (exit 0 covers the seqs it names)")
	fs.StringVar(&f.witnesses, "witnesses", "", "a witness policy `FILE` (c2sp.org/tlog-policy; default BACKOFFICE_AUDIT_WITNESSES): each checkpoints file's newest checkpoint must carry its quorum of cosignatures, and the answer says which witnesses signed")
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	policy, err := verifyPolicy(f.witnesses, cfg.AuditWitnessPolicy)
	if err != nil {
		return err
	}
	if f.from != "" && (f.head != "" || f.export != "" || len(f.checkpoints) > 0 || f.limit || policy != nil) {
		return usagef("--from-checkpoint walks from the one checkpoint it names: it takes none of --head, --export, --checkpoints, --limit-to-keys, --witnesses")
	}
	expects, err := headExpect(f.head)
	if err != nil {
		return err
	}
	keys, err := parsePublicKeys(f.publicKeys)
	if err != nil {
		return err
	}
	if f.export != "" {
		if len(f.checkpoints) == 0 || len(keys) == 0 {
			return usagef("--export needs --checkpoints and --public-key: an export alone proves nothing")
		}
		return verifyExport(env, f, keys, expects)
	}
	ring, err := masterRing(cfg)
	if errors.Is(err, errNoMasterKey) {
		return reportUncheckable(env, fmt.Errorf("%w: no master key ring to check the links with (or check an export with --export, --checkpoints and --public-key): %v", ErrCannotCheck, err))
	}
	if err != nil {
		return err
	}
	held, err := ringPublicKeys(ring)
	if err != nil {
		return err
	}
	maps.Copy(keys, held)
	if f.from != "" {
		return verifyFromCheckpoint(ctx, env, cfg, ring, keys, f.from)
	}
	files := f.checkpoints
	if cfg.AuditCheckpoints != "" && !slices.Contains(files, cfg.AuditCheckpoints) {
		files = append([]string{cfg.AuditCheckpoints}, files...)
	}
	more, notes, unvouched, vouched, err := checkpointExpects(files, keys, f.limit)
	if err != nil {
		return reportUncheckable(env, err)
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: the database: %v", ErrCannotCheck, err))
	}
	defer st.Close()
	rep, err := st.VerifyAuditChain(ctx, ring, append(expects, more...))
	if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: %v", ErrCannotCheck, err))
	}
	if rep.Break == nil {
		// Tables that may drop events as they are written leave a chain that holds over the gaps.
		if err := st.CheckTrailCatalog(ctx); err != nil {
			return reportUncheckable(env, fmt.Errorf("%w: %v: an event written while they were so may be missing with no trace in the chain", ErrCannotCheck, err))
		}
	}
	if rep.Break == nil && rep.Unchecked == nil {
		if err := checkTrees(ctx, st, vouched); errors.Is(err, checkpoint.ErrInconsistent) {
			fmt.Fprintf(env.Stdout, "BROKEN: %s\n", err)
			return fmt.Errorf("%w: %v", errAuditChainBroken, err)
		} else if err != nil {
			return reportUncheckable(env, fmt.Errorf("%w: %v", ErrCannotCheck, err))
		}
	}
	var witnessed []string
	if rep.Break == nil && rep.Unchecked == nil && policy != nil {
		if witnessed, err = witnessedLines(files, keys, policy); err != nil {
			return reportUncheckable(env, err)
		}
	}
	if err := reportChain(env, rep, notes, len(files), claim{unvouched: unvouched, limit: f.limit}); err != nil {
		return err
	}
	for _, l := range witnessed {
		fmt.Fprintln(env.Stdout, l)
	}
	return nil
}

// verifyFromCheckpoint checks the trail after the checkpoint in the file at path, which the
// auditor trusts: its signature under keys (the ring's and --public-key), that the log's tree
// now extends the tree it states (a consistency proof, O(log n) stored hashes), and every event
// after it, link by link and leaf by leaf, from the event it names. The events up to it are not
// walked, and the report says so: exit 0 claims only the seqs after it.
func verifyFromCheckpoint(ctx context.Context, env Env, cfg Config, ring *secrets.Ring, keys map[string]ed25519.PublicKey, path string) error {
	read, err := checkpoint.ReadFile(path)
	if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: --from-checkpoint: %v", ErrCannotCheck, err))
	}
	if len(read.Entries) != 1 || !read.Entries[0].IsNote() {
		return reportUncheckable(env, fmt.Errorf("%w: --from-checkpoint: %s holds %d checkpoints; give a file holding the one signed note you trust", ErrCannotCheck, path, len(read.Entries)))
	}
	trusted := read.Entries[0]
	if err := checkpoint.CheckPredecessor(trusted.Checkpoint, keys); err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: --from-checkpoint: %v", ErrCannotCheck, err))
	}
	base, err := expectOf(trusted)
	if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: --from-checkpoint: %v", ErrCannotCheck, err))
	}
	st, err := openStore(ctx, cfg, nil)
	if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: the database: %v", ErrCannotCheck, err))
	}
	defer st.Close()
	if err := checkTrees(ctx, st, [][]checkpoint.Entry{{trusted}}); errors.Is(err, checkpoint.ErrInconsistent) {
		fmt.Fprintf(env.Stdout, "BROKEN: %s\n", err)
		return fmt.Errorf("%w: %v", errAuditChainBroken, err)
	} else if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: %v", ErrCannotCheck, err))
	}
	follow, err := st.FollowAuditChain(ctx, ring, &base, nil)
	if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: %v", ErrCannotCheck, err))
	}
	v, err := follow.Next(ctx)
	if brk := (*auditlog.ChainBreak)(nil); errors.As(err, &brk) {
		fmt.Fprintf(env.Stdout, "BROKEN: %s (after %s, which is trusted)\n", brk, trusted.What())
		return fmt.Errorf("%w: %v", errAuditChainBroken, brk)
	}
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: %v", ErrCannotCheck, err))
	}
	// Tables that may drop events as they are written leave a chain that holds over the gaps.
	if err := st.CheckTrailCatalog(ctx); err != nil {
		return reportUncheckable(env, fmt.Errorf("%w: %v: an event written while they were so may be missing with no trace in the chain", ErrCannotCheck, err))
	}
	if pruned := follow.PrunedBelow(); pruned > trusted.Seq+1 {
		// The events after the trusted checkpoint up to the prune are in the prune's archive.
		fmt.Fprintf(env.Stdout, "intact after the trusted checkpoint: %s proved (%d events, links and tree), pruned by policy below %d\n", seqRange(pruned, v.Seq()), v.Seq()-pruned+1, pruned)
		fmt.Fprintf(env.Stdout, "pruned: %s, after the trusted checkpoint, were archived and removed under the prune's signed note\n", seqRange(trusted.Seq+1, pruned-1))
	} else if v.Seq() > trusted.Seq {
		fmt.Fprintf(env.Stdout, "intact after the trusted checkpoint: %s proved (%d events, links and tree)\n", seqRange(trusted.Seq+1, v.Seq()), v.Seq()-trusted.Seq)
	} else {
		fmt.Fprintf(env.Stdout, "intact after the trusted checkpoint: no events after seq %d\n", trusted.Seq)
	}
	fmt.Fprintf(env.Stdout, "not walked: %s, trusted as %s states them (size %d, root %s)\n", seqRange(1, trusted.Seq), trusted.What(), trusted.Seq, trusted.Root)
	return nil
}

// auditTree is the audit log's Merkle tree as the store keeps it (*store.Store is one).
type auditTree interface {
	AuditTreeSize(ctx context.Context) (int64, error)
	AuditHashReader(ctx context.Context) tlog.HashReader
}

// checkTrees holds the log to the trees the checkpoints checked state: in each file, each note's
// tree extends the note's before it, and the log's tree now extends the newest
// (checkpoint.Extends: a consistency proof over the stored hashes). A tree that does not is
// checkpoint.ErrInconsistent, naming both sizes; a proof the store cannot make is another error.
func checkTrees(ctx context.Context, t auditTree, vouched [][]checkpoint.Entry) error {
	r := t.AuditHashReader(ctx)
	size, err := t.AuditTreeSize(ctx)
	if err != nil {
		return err
	}
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		return fmt.Errorf("the audit log's tree of size %d: %v", size, err)
	}
	for _, entries := range vouched {
		var prev *checkpoint.Entry
		for i, e := range entries {
			if !e.IsNote() {
				continue
			}
			if prev != nil {
				if err := checkpoint.Consistent(prev.Checkpoint, e.Checkpoint, r); err != nil {
					return fmt.Errorf("%s: %w", e.What(), err)
				}
			}
			prev = &entries[i]
		}
		if prev != nil {
			if err := checkpoint.Extends(size, root, prev.Checkpoint, r); err != nil {
				return fmt.Errorf("the audit log against %s: %w", prev.What(), err)
			}
		}
	}
	return nil
}

// headExpect reads --head: a link is 64 hex digits, and anything else is a usage error (a short
// value would otherwise read as a cut tail).
func headExpect(head string) ([]auditlog.ChainExpect, error) {
	head = strings.TrimSpace(head)
	if head == "" {
		return nil, nil
	}
	link, err := hex.DecodeString(head)
	if err != nil || len(head) != 64 {
		return nil, usagef("--head: want a link of 64 hex digits, as verify prints it after \"hash:\"")
	}
	return []auditlog.ChainExpect{{Link: link}}, nil
}

func parsePublicKeys(values []string) (map[string]ed25519.PublicKey, error) {
	keys := map[string]ed25519.PublicKey{}
	for _, v := range values {
		id, pub, err := checkpoint.ParsePublicKey(v)
		if err != nil {
			return nil, usagef("--public-key: %v", err)
		}
		keys[id] = pub
	}
	return keys, nil
}

// checkpointExpects reads the checkpoints files and turns the checkpoints each vouches for into
// what the chain must hold; unvouched are the checkpoints after the last one a key given vouches
// for in each file, which nothing checked; notes say what else was left out (torn lines). A file
// missing or not holding together is an ErrCannotCheck, and so is a file none of whose
// checkpoints is signed under a key given, unless limit: then they are all unvouched.
func checkpointExpects(files []string, keys map[string]ed25519.PublicKey, limit bool) (expects []auditlog.ChainExpect, notes []string, unvouched []checkpoint.Entry, vouched [][]checkpoint.Entry, err error) {
	for _, file := range files {
		more, read, left, err := fileExpects(file, keys)
		if err != nil && limit && len(read.Entries) > 0 && !signedUnderAny(read.Entries, keys) && chained(read.Entries) {
			more, left, err = nil, read.Entries, nil
		}
		if err != nil {
			return nil, nil, nil, nil, err
		}
		vouched = append(vouched, read.Entries[:len(read.Entries)-len(left)])
		if len(read.Entries) == 0 {
			notes = append(notes, file+" holds no checkpoint yet")
		}
		notes = append(notes, tornNotes(read)...)
		if n := checkpoint.StartsMidway(read.Entries); n != "" {
			notes = append(notes, n)
		}
		unvouched = append(unvouched, left...)
		expects = append(expects, more...)
	}
	return expects, notes, unvouched, vouched, nil
}

// chained tells whether each of entries names the one before it.
func chained(entries []checkpoint.Entry) bool {
	for i := 1; i < len(entries); i++ {
		if entries[i].Prev != entries[i-1].ID() {
			return false
		}
	}
	return true
}

// signedUnderAny tells whether one of entries names a key of keys.
func signedUnderAny(entries []checkpoint.Entry, keys map[string]ed25519.PublicKey) bool {
	for _, e := range entries {
		if _, ok := keys[e.KeyID]; ok {
			return true
		}
	}
	return false
}

// fileExpects reads one checkpoints file: what the checkpoints it vouches for say the chain
// holds, the file as read, and the checkpoints after the last one vouched for (signed under keys
// not given), which nothing checks.
func fileExpects(file string, keys map[string]ed25519.PublicKey) (expects []auditlog.ChainExpect, read checkpoint.File, unvouched []checkpoint.Entry, err error) {
	read, err = checkpoint.ReadFile(file)
	if err != nil {
		return nil, read, nil, fmt.Errorf("%w: %v", ErrCannotCheck, err)
	}
	vouched, unvouched, err := checkpoint.Vouched(read.Entries, keys)
	if err != nil {
		return nil, read, nil, fmt.Errorf("%w: %s", ErrCannotCheck, strings.TrimPrefix(err.Error(), checkpoint.ErrUnverifiable.Error()+": "))
	}
	for _, e := range vouched {
		x, err := expectOf(e)
		if err != nil {
			return nil, read, nil, fmt.Errorf("%w: %v", ErrCannotCheck, err)
		}
		expects = append(expects, x)
	}
	return expects, read, unvouched, nil
}

// tornNotes say which lines of a file a write left unfinished.
func tornNotes(read checkpoint.File) []string {
	var notes []string
	for _, line := range read.Torn {
		notes = append(notes, fmt.Sprintf("%s line %d is torn (a write cut short by a full disk or a crash): left out; the checkpoints around it were checked", read.Name, line))
	}
	return notes
}

// unvouchedNote says which checkpoints of a file nothing checked, and under which keys.
func unvouchedNote(file string, unvouched []checkpoint.Entry) string {
	var ids []string
	for _, e := range unvouched {
		if !slices.Contains(ids, e.KeyID) {
			ids = append(ids, e.KeyID)
		}
	}
	return fmt.Sprintf("%s: the last %d checkpoints are signed under a key not given (%s), and were not checked", file, len(unvouched), strings.Join(ids, ", "))
}

// expectOf is what a checkpoint says the chain holds.
func expectOf(e checkpoint.Entry) (auditlog.ChainExpect, error) {
	x := auditlog.ChainExpect{Seq: e.Seq, What: e.What()}
	var err1, err2 error
	if e.Head != "" {
		x.Link, err1 = hex.DecodeString(e.Head)
	}
	x.Digest, err2 = hex.DecodeString(e.Digest)
	if err := errors.Join(err1, err2); err != nil || e.Seq < 1 || len(x.Digest) != sha256.Size {
		return x, fmt.Errorf("%s: not a checkpoint of the trail (seq, head or digest malformed)", e.What())
	}
	if e.IsNote() {
		x.Root = e.Root[:]
	}
	return x, nil
}

// verifyExport checks an export's audit events against the checkpoints, with public keys only:
// the digests prove every event up to each checkpoint; the links cannot be checked without the
// master key.
func verifyExport(env Env, f verifyFlags, keys map[string]ed25519.PublicKey, expects []auditlog.ChainExpect) error {
	more, notes, unvouched, _, err := checkpointExpects(f.checkpoints, keys, f.limit)
	if err != nil {
		return reportUncheckable(env, err)
	}
	expects = append(expects, more...)
	rep, inOrder, err := walkExport(f.export, expects)
	if err == nil && !inOrder {
		rep, err = walkExportSorted(f.export, expects)
	}
	if err != nil {
		return err
	}
	if rep.Break == nil && rep.Matched == 0 {
		// Without the master key only checkpoints prove anything.
		return reportUncheckable(env, fmt.Errorf("%w: no checkpoint covers the export (the files hold none signed under a key given)", ErrCannotCheck))
	}
	return reportChain(env, rep, notes, len(f.checkpoints), claim{unvouched: unvouched, limit: f.limit})
}

// walkExport walks the export's audit events as they stream from the file, one in memory at a
// time, as export writes them: in seq order. inOrder is false when the file has them in another
// order (edited, or sorted by some other field): the walk, which takes them in seq order, did not
// see them as it must, and its report is not the export's.
func walkExport(path string, expects []auditlog.ChainExpect) (rep auditlog.ChainReport, inOrder bool, err error) {
	w := auditlog.NewChainWalk(nil, nil, nil, expects)
	inOrder, walking := true, true
	last := int64(math.MinInt64)
	err = streamExport(path, func(e domain.AuditEvent) {
		inOrder = inOrder && e.Seq >= last
		last = e.Seq
		if walking && inOrder {
			walking = w.Step(e)
		}
	})
	return w.Finish(), inOrder, err
}

// walkExportSorted walks the export's audit events in seq order, events of one seq in the file's
// order, for a file whose events come in another order. It holds every event (only them) in
// memory: the order of the file's events is not the chain's, and sorting them is how an auditor
// reads the export (docs/compliance.md), so such a file gets the same answer as one in order.
func walkExportSorted(path string, expects []auditlog.ChainExpect) (auditlog.ChainReport, error) {
	var events []domain.AuditEvent
	if err := streamExport(path, func(e domain.AuditEvent) { events = append(events, e) }); err != nil {
		return auditlog.ChainReport{}, err
	}
	slices.SortStableFunc(events, func(a, b domain.AuditEvent) int { return cmp.Compare(a.Seq, b.Seq) })
	w := auditlog.NewChainWalk(nil, nil, nil, expects)
	for _, e := range events {
		if !w.Step(e) {
			break
		}
	}
	return w.Finish(), nil
}

// streamExport reads and checks the export at path as a dataset, handing each of its audit events
// to each in the file's order.
func streamExport(path string, each func(domain.AuditEvent)) error {
	r, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: --export: %v", ErrCannotCheck, err)
	}
	defer r.Close()
	if err := dataset.StreamAuditEvents(r, r, each); err != nil {
		return fmt.Errorf("--export: %w", err)
	}
	return nil
}

// reportUncheckable prints why the trail cannot be checked, and returns the error for exit 3.
func reportUncheckable(env Env, err error) error {
	fmt.Fprintf(env.Stdout, "CANNOT CHECK: %s\n", strings.TrimPrefix(err.Error(), ErrCannotCheck.Error()+": "))
	return err
}

// claim is what a verify was given beyond the walk: the checkpoints nothing it holds could check
// (signed under keys not given, after the last one a key given vouches for), and whether the
// auditor limited the claim to what the keys given prove (--limit-to-keys).
type claim struct {
	unvouched []checkpoint.Entry
	limit     bool
}

// proof is what a walk that neither broke nor stopped proved, and what it was given and did not
// prove: the events up to seq proved (every event, with the ring; up to the newest checkpoint
// checked, without it), the seq the trail given ends at, and the newest seq a checkpoint not
// checked claims.
type proof struct {
	proved, events, claimed int64
	links                   bool
	unvouched               []checkpoint.Entry
}

func proofOf(rep auditlog.ChainReport, c claim) proof {
	p := proof{proved: rep.Events, events: rep.Events, claimed: rep.Events, links: rep.LinksUnchecked == 0, unvouched: c.unvouched}
	if !p.links {
		p.proved = min(rep.Covered, rep.Events)
	}
	for _, e := range c.unvouched {
		p.claimed = max(p.claimed, e.Seq)
	}
	return p
}

// whole tells whether everything given was checked: every checkpoint, and every event.
func (p proof) whole() bool { return len(p.unvouched) == 0 && p.proved >= p.claimed }

// why is the first line's reason when not whole.
func (p proof) why() string {
	if len(p.unvouched) == 0 {
		return fmt.Sprintf("%s of the export %s covered by no checkpoint checked, and without the master key nothing else proves %s",
			seqRange(p.proved+1, p.events), plural(p.events > p.proved+1, "are", "is"), plural(p.events > p.proved+1, "them", "it"))
	}
	var ids, where []string
	for _, e := range p.unvouched {
		if !slices.Contains(ids, e.KeyID) {
			ids = append(ids, e.KeyID)
		}
	}
	// The checkpoints not checked are each file's last ones: one run of lines per file.
	for i, j := 0, 0; i < len(p.unvouched); i = j {
		for j = i + 1; j < len(p.unvouched) && p.unvouched[j].File == p.unvouched[i].File; j++ {
		}
		first, last := p.unvouched[i], p.unvouched[j-1]
		lines := fmt.Sprintf("lines %d-%d", first.Line, last.Line)
		if i == j-1 {
			lines = fmt.Sprintf("line %d", first.Line)
		}
		where = append(where, fmt.Sprintf("%s %s (%s)", first.File, lines, seqRange(first.Seq, last.Seq)))
	}
	return fmt.Sprintf("checkpoints signed under a key not given (%s) were not checked: %s", strings.Join(ids, ", "), strings.Join(where, ", "))
}

// lines are the answer's lines that say what was proved and what was not.
func (p proof) lines() []string {
	how := "by the links and anchors the ring checks, and the checkpoints checked"
	if !p.links {
		how = "by the digests of the checkpoints checked (links not checked: no master key)"
	}
	proved := "proved: nothing"
	if p.proved > 0 {
		proved = fmt.Sprintf("proved: %s, %s", seqRange(1, p.proved), how)
	}
	var not string
	switch {
	case p.proved >= p.claimed:
		var seqs []int64
		for _, e := range p.unvouched {
			seqs = append(seqs, e.Seq)
		}
		not = fmt.Sprintf("not proved: that the trail is what the checkpoints not checked signed (%s)", seqRange(slices.Min(seqs), slices.Max(seqs)))
	case p.proved >= p.events:
		not = fmt.Sprintf("not proved: %s, which checkpoints not checked claim the trail held", seqRange(p.proved+1, p.claimed))
	case p.claimed > p.events:
		not = fmt.Sprintf("not proved: %s (the trail given ends at seq %d)", seqRange(p.proved+1, p.claimed), p.events)
	default:
		not = "not proved: " + seqRange(p.proved+1, p.claimed)
	}
	return []string{proved, not}
}

// seqRange is "seq A-B", or "seq A" when they are one.
func seqRange(from, to int64) string {
	if from == to {
		return fmt.Sprintf("seq %d", from)
	}
	return fmt.Sprintf("seq %d-%d", from, to)
}

func plural(many bool, more, one string) string {
	if many {
		return more
	}
	return one
}

// reportChain prints a walk's outcome and returns the error that gives its exit status: intact
// only when every checkpoint and every event given was checked, or, with a limited claim, for the
// seqs it names.
func reportChain(env Env, rep auditlog.ChainReport, notes []string, files int, c claim) error {
	if rep.Break != nil {
		fmt.Fprintf(env.Stdout, "BROKEN: %s\n", rep.Break.Error())
		return fmt.Errorf("%w: %s", errAuditChainBroken, rep.Break.Where())
	}
	if rep.Unchecked != nil {
		return reportUncheckable(env, fmt.Errorf("%w: %s", ErrCannotCheck, strings.TrimPrefix(rep.Unchecked.Error(), "cannot check the audit chain: ")))
	}
	p := proofOf(rep, c)
	var uncheckable error
	switch {
	case p.whole() && rep.PrunedBelow > 0:
		fmt.Fprintf(env.Stdout, "intact: %d events (%s), pruned by policy below %d\n", rep.Events-rep.PrunedBelow+1, seqRange(rep.PrunedBelow, rep.Events), rep.PrunedBelow)
		fmt.Fprintf(env.Stdout, "pruned: %s were archived and removed; the newest prune (its archive sha256 %s, holding the events after any earlier prune) was signed %s under key %s\n",
			seqRange(1, rep.PrunedBelow-1), hex.EncodeToString(rep.Prune.Archive[:]), rep.Prune.At, rep.Prune.KeyID)
	case p.whole():
		fmt.Fprintf(env.Stdout, "intact: %d events", rep.Events)
		if rep.Legacy > 0 {
			fmt.Fprintf(env.Stdout, " (the first %d from before the chain, unlinked)", rep.Legacy)
		}
		fmt.Fprintln(env.Stdout)
	case c.limit && p.proved > 0:
		fmt.Fprintf(env.Stdout, "intact up to seq %d, as far as the keys given prove (--limit-to-keys): ", p.proved)
		if p.proved < p.claimed {
			fmt.Fprintf(env.Stdout, "%s not proved\n", seqRange(p.proved+1, p.claimed))
		} else {
			fmt.Fprintln(env.Stdout, "the checkpoints not checked are not proved")
		}
	default:
		uncheckable = fmt.Errorf("%w: %s", ErrCannotCheck, p.why())
		reportUncheckable(env, uncheckable)
	}
	if !p.whole() {
		for _, l := range p.lines() {
			fmt.Fprintln(env.Stdout, l)
		}
	} else if rep.LinksUnchecked > 0 {
		fmt.Fprintf(env.Stdout, "links: not checked (no master key); the checkpoints' digests prove events 1 to %d\n", rep.Covered)
	}
	fmt.Fprintf(env.Stdout, "checkpoints: %d matched, from %d files\n", rep.Matched, files)
	for _, n := range append(notes, rep.Notes...) {
		fmt.Fprintf(env.Stdout, "note: %s\n", n)
	}
	if files == 0 {
		fmt.Fprintln(env.Stdout, "note: no checkpoints given: a tail cut off the trail cannot be caught (set BACKOFFICE_AUDIT_CHECKPOINTS)")
	}
	if uncheckable != nil {
		fmt.Fprintln(env.Stdout, "note: to claim only what the keys given prove, verify again with --limit-to-keys")
		return uncheckable
	}
	if rep.Events > 0 && p.proved >= rep.Events {
		fmt.Fprintf(env.Stdout, "head: seq %d event %s at %s\n", rep.Head.Seq, rep.Head.ID, rep.Head.At.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
		fmt.Fprintf(env.Stdout, "hash: %s\n", orDash(rep.Head.Hash))
		fmt.Fprintf(env.Stdout, "digest: %s\n", hex.EncodeToString(rep.Digest))
	}
	return nil
}

// runAuditPublicKey prints the public key that checks the checkpoints serve signs under the
// active master key (or --key-id's), as KEYID:BASE64: what an auditor is given; with --note, as
// the verifier key of golang.org/x/mod/sumdb/note, named by the log's origin
// (BACKOFFICE_AUDIT_ORIGIN), which note.NewVerifier reads.
func runAuditPublicKey(ctx context.Context, env Env, cfg Config, args []string) error {
	fs := newFlagSet("audit public-key")
	fs.BoolVar(&cfg.Demo, "demo", false, demoFlagText)
	keyID := fs.String("key-id", "", "the master key whose checkpoint key to print (default: the active key)")
	asNote := fs.Bool("note", false, "print it as a signed note's verifier key (ORIGIN+HASH+BASE64), for golang.org/x/mod/sumdb/note")
	if err := cfg.parseNoArgs(fs, args); err != nil {
		return err
	}
	ring, err := masterRing(cfg)
	if err != nil {
		return err
	}
	id := cmp.Or(*keyID, ring.ActiveKeyID())
	pub, err := ring.CheckpointPublicKey(id)
	if err != nil {
		return usagef("--key-id: %q is not a key of the ring", id)
	}
	if !*asNote {
		fmt.Fprintln(env.Stdout, checkpoint.FormatPublicKey(id, pub))
		return nil
	}
	vkey, err := checkpoint.VerifierKey(cmp.Or(cfg.AuditOrigin, checkpoint.DefaultOrigin), pub)
	if err != nil {
		return fmt.Errorf("BACKOFFICE_AUDIT_ORIGIN: %w", err)
	}
	fmt.Fprintln(env.Stdout, vkey)
	return nil
}
