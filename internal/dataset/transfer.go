package dataset

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"backoffice/internal/auditlog"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/store/bulkload"
)

// kind is an entry of kinds with its record type erased: what the file's decoding, the import
// and the export do with one key.
type kind struct {
	key, table, what string
	// refs are the keys of the kinds its records reference: they are imported first.
	refs []string
	// decode reads the key's array of records from the file into a Dataset.
	decode func(rd *reader, ds *Dataset) error
	// stream reads the key's array as decode does, but keeps no record: each is checked as it
	// comes and handed to each (a *T). nil for a kind whose rules span its records (checkAll).
	stream func(rd *reader, each func(any)) error
	// links are its references field by field, with their columns: where a delete looks for
	// what still refers to a record. parts are tables of rows that belong to its records.
	links []link
	parts []part
	// serviceWritten: its records are the service's own doing, never replaced or deleted by an
	// import. sealed: its rows hold secrets (a sealed SSN, a document's content), whose deleted
	// bytes the engine is told to purge once an import has deleted or replaced one.
	serviceWritten, sealed bool
	// check holds the records to the file's rules; ids lists their ids, for references from
	// elsewhere in the file.
	check func(c *checker, ds *Dataset)
	ids   func(ds *Dataset) []domain.ID
	count func(ds *Dataset) int
	write func(im *importer) error
	read  func(x *exporter) error // nil: never exported
}

// spec is an entry of kinds: a key of the file and the records of type T under it. A kind that
// needs more than one row per record says so with the hooks row, after, write and read.
type spec[T any] struct {
	key   string // the file's key
	table string // the SQL table of its records
	what  string // a record, as a reference error names it ("no <what> with this id")

	records func(ds *Dataset) *[]T
	id      func(r *T) *domain.ID
	refs    []ref[T]

	// check holds a record to the file's rules, once its own id has been checked (and made
	// canonical) and found once in the key; checkAll, instead, checks the whole key, for rules
	// across records.
	check    func(c *checker, path string, r *T)
	checkAll func(c *checker, records []T)

	columns string           // of table, in the order of args and scan
	order   string           // the export's ORDER BY; "id" when empty
	args    func(r *T) []any // a record's row
	scan    func(sc store.Scanner) (T, error)

	// row, instead of args, makes a row that needs the import (to seal, or to look in the
	// database); after runs once every record's row is in.
	row   func(im *importer, path string, r *T) ([]any, error)
	after func(im *importer, records []T) error
	// write, instead of a row per record, adds the records once their references are checked.
	write func(im *importer, records []T) error
	// read, instead of reading table with scan, reads the records for the export.
	read func(x *exporter) ([]T, error)

	// unique are its fields, besides the id, that no two records may share (a unique index of
	// table): what a row refused by one of them is named by.
	unique []unique[T]

	// parts are tables of rows that belong to a record: cleared when it is replaced or deleted.
	parts []part
	// serviceWritten records (merchant notes, audit events) are only ever added by an import.
	serviceWritten bool
	// sealed rows hold secrets: replacing or deleting one purges the deleted bytes after commit.
	sealed bool
}

// link is a reference of a kind, as a delete looks it up: the file's field, its column, the keys
// of the kinds it may name.
type link struct {
	field, column string
	to            []string
}

// part is a table of rows that belong to a record (a lead's selected card plans): owner is its
// column naming the record; column names a record of kind to, field as the file names it.
type part struct {
	table, owner      string
	field, column, to string
}

// unique is a field that no two records of a kind may share: the file's field, its column, the
// record's value there (nil: none, which any number of records may have), and the rule, as an
// error says it.
type unique[T any] struct {
	field, column string
	value         func(r *T) any
	rule          string
}

// ref is a field of a record that names a record of another kind (of one of several).
type ref[T any] struct {
	field string                // as the file names it
	id    func(r *T) *domain.ID // nil when the record names none
	to    []string              // the keys of the kinds it may name
}

func (s spec[T]) kind() kind {
	k := kind{key: s.key, table: s.table, what: s.what, parts: s.parts, serviceWritten: s.serviceWritten, sealed: s.sealed}
	for _, r := range s.refs {
		k.refs = append(k.refs, r.to...)
		k.links = append(k.links, link{field: r.field, column: snake(r.field), to: r.to})
	}
	k.decode = func(rd *reader, ds *Dataset) error { return readRecords(rd, s.key, s.records(ds)) }
	checkOne := func(c *checker, i int, r *T) {
		c.key(s.key, i, s.id(r))
		if s.check != nil {
			s.check(c, at(s.key, i), r)
		}
	}
	k.check = func(c *checker, ds *Dataset) {
		records := *s.records(ds)
		if s.checkAll != nil {
			s.checkAll(c, records)
			return
		}
		for i := range records {
			checkOne(c, i, &records[i])
		}
	}
	if s.checkAll == nil {
		k.stream = func(rd *reader, each func(any)) error { return streamRecords(rd, s.key, checkOne, each) }
	}
	k.ids = func(ds *Dataset) []domain.ID {
		records := *s.records(ds)
		ids := make([]domain.ID, len(records))
		for i := range records {
			ids[i] = *s.id(&records[i])
		}
		return ids
	}
	k.count = func(ds *Dataset) int { return len(*s.records(ds)) }
	k.write = func(im *importer) error { return s.importAll(im) }
	if s.scan != nil || s.read != nil {
		k.read = func(x *exporter) error {
			records, err := s.readAll(x)
			*s.records(x.ds) = records
			return err
		}
	}
	return k
}

// importAll checks each record's references and inserts its row; a row refused for its id names
// the record as a duplicate.
func (s spec[T]) importAll(im *importer) error {
	records := *s.records(im.ds)
	if len(records) == 0 {
		return nil
	}
	last := make([]domain.ID, len(s.refs)) // the last id each reference found
	refs := func(i int, r *T) error {
		for k, ref := range s.refs {
			id := ref.id(r)
			if id == nil || *id == last[k] && *id != "" {
				continue // records in a row often name the same one: the logs of one entity
			}
			if err := im.ref(at(s.key, i)+"."+ref.field, ref.to, *id); err != nil {
				return err
			}
			last[k] = *id
		}
		return nil
	}
	if s.write != nil {
		for i := range records {
			if err := refs(i, &records[i]); err != nil {
				return err
			}
		}
		return s.write(im, records)
	}
	w, err := im.writer(im.kinds[s.key], s.columns)
	if err != nil {
		return err
	}
	defer w.close()
	for i := range records {
		r := &records[i]
		if err := refs(i, r); err != nil {
			return w.flush(err) // a refused row before this one is the first problem
		}
		path := at(s.key, i)
		args, err := s.rowOf(im, path, r)
		if err != nil {
			return w.flush(err)
		}
		clash := func(stored bool) error { return s.clash(im, records, i, stored) }
		if err := w.put(path, *s.id(r), args, clash); err != nil {
			return err
		}
	}
	if err := w.flush(nil); err != nil {
		return err
	}
	if s.after != nil {
		return s.after(im, records)
	}
	return nil
}

// clash names the unique field of record i whose value another record holds: an earlier record
// of the file, else (stored: the transaction can still be asked) the stored record that holds it.
// Where the transaction cannot be asked, the one unique field the record fills is named, its
// holder not. nil when it cannot tell.
func (s spec[T]) clash(im *importer, records []T, i int, stored bool) error {
	r := &records[i]
	var filled []unique[T]
	for _, u := range s.unique {
		v := u.value(r)
		if v == nil {
			continue
		}
		filled = append(filled, u)
		path := at(s.key, i) + "." + u.field
		for j := range i {
			if sameValue(u.value(&records[j]), v) {
				return Errorf(path, "the same as %s[%d].%s: %s", s.key, j, u.field, u.rule)
			}
		}
		if !stored {
			continue
		}
		holder, found, err := im.b.Holder(s.table, u.column, v)
		if err != nil {
			return err
		}
		if found && holder != *s.id(r) {
			return Errorf(path, "the same as %s %s's, already in the database: %s", s.what, holder, u.rule)
		}
	}
	if !stored && len(filled) == 1 {
		u := filled[0]
		return Errorf(at(s.key, i)+"."+u.field, "the same as another %s's, already in the database: %s", s.what, u.rule)
	}
	return nil
}

// sameValue compares two values of a unique field: ids, strings or hashes.
func sameValue(a, b any) bool {
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return a == b
}

func (s spec[T]) rowOf(im *importer, path string, r *T) ([]any, error) {
	if s.row != nil {
		return s.row(im, path, r)
	}
	return s.args(r), nil
}

func (s spec[T]) readAll(x *exporter) ([]T, error) {
	if s.read != nil {
		return s.read(x)
	}
	return readTable(x, s.table, s.columns, cmp.Or(s.order, "id"), s.scan)
}

// readTable reads every row of table as a record.
func readTable[T any](x *exporter, table, columns, orderBy string, scan func(store.Scanner) (T, error)) ([]T, error) {
	var out []T
	err := x.sn.ReadAll(table, columns, orderBy, func(sc store.Scanner) error {
		r, err := scan(sc)
		out = append(out, r)
		return err
	})
	return out, err
}

// importOrder is kinds in an order in which every kind comes after the kinds it references: the
// file's order, each kind moved only as far as it must.
func importOrder(all []kind) []kind {
	placed := map[string]bool{}
	var out []kind
	for len(out) < len(all) {
		n := len(out)
		for _, k := range all {
			if placed[k.key] || !allPlaced(k.refs, placed) {
				continue
			}
			placed[k.key] = true
			out = append(out, k)
			break
		}
		if len(out) == n {
			panic("dataset: the kinds' references form a cycle") // the table is wrong, not the file
		}
	}
	return out
}

func allPlaced(keys []string, placed map[string]bool) bool {
	for _, key := range keys {
		if !placed[key] {
			return false
		}
	}
	return true
}

// Store is what the import and the export need of the store (*store.Store is one): the import's
// transaction, handed to bulkload (Load); the export's snapshot (Dump); which of the file's SAM
// log ids are stored already, to name one the import found taken; and, after an import that
// deleted records, the engine's purge of the deleted bytes.
type Store interface {
	Load(ctx context.Context, fn func(b *bulkload.Bulk) error) error
	Dump(ctx context.Context, fn func(sn *bulkload.Snapshot) error) error
	StoredSAMLogIDs(ctx context.Context, ids []domain.ID) ([]bool, error)
	PurgeDeleted(ctx context.Context)
}

// Import adds every record of ds to the store in one transaction: all of it, or nothing. A
// reference may name a record of the file, anywhere in it, or one in the database; an id that is
// in the database already is a duplicate. A problem with the file comes back as an *Error naming
// the record and field. It returns how many records it added.
func Import(ctx context.Context, st Store, ds *Dataset, ring *secrets.Ring) (int, error) {
	c, err := ImportWith(ctx, st, ds, ring, Options{})
	return c.Added, err
}

// Options change what an import does.
type Options struct {
	// Upsert: a record whose id is stored replaces it whole (import --upsert), and the file's
	// deletes key removes records. Without it an import only adds, and refuses a deletes key.
	Upsert bool
	// Progress, if set, is called from the import's goroutine as records are written, with the
	// records written so far (added, replaced or deleted).
	Progress func(done int)
}

// Counts are what an import did.
type Counts struct{ Added, Replaced, Deleted int }

// Total is every record the import wrote or removed.
func (c Counts) Total() int { return c.Added + c.Replaced + c.Deleted }

// ImportWith imports ds as Import does, or, with opts.Upsert, replaces and deletes records too:
// each record is checked as a new one is, the one-active-pricing-model rule holds for the result,
// a delete that would leave a reference dangling is refused naming the referrer. All of it, or
// nothing. Once a deleted or replaced record's secrets (an SSN, a document) are gone, the engine
// is told to purge the deleted bytes, as the document delete does.
func ImportWith(ctx context.Context, st Store, ds *Dataset, ring *secrets.Ring, opts Options) (Counts, error) {
	return importAll(ctx, st, ds, nil, ring, opts)
}

// ImportFile imports a file that ReadFile has read, as ImportWith does, reading its SAM action
// logs again from the file a chunk at a time (see stream.go). The file must not change meanwhile:
// if it has, the import fails and nothing is imported.
func ImportFile(ctx context.Context, st Store, f *File, ring *secrets.Ring, opts Options) (Counts, error) {
	return importAll(ctx, st, f.ds, f, ring, opts)
}

// importAll imports ds and, if f is not nil, the SAM action logs of f.
func importAll(ctx context.Context, st Store, ds *Dataset, f *File, ring *secrets.Ring, opts Options) (Counts, error) {
	if len(ds.Deletes) > 0 && !opts.Upsert {
		return Counts{}, Errorf(deletesKey, "deleting records needs import --upsert")
	}
	all := kinds()
	im := &importer{ds: ds, ring: ring, all: all, kinds: map[string]*kind{}, inFile: map[string]map[domain.ID]bool{},
		known: map[string]map[domain.ID]bool{}, upsert: opts.Upsert, progress: opts.Progress,
		deleted: map[string]map[domain.ID]int{}, file: f}
	for i := range all {
		im.kinds[all[i].key] = &all[i]
	}
	for _, k := range all {
		for _, key := range k.refs {
			if im.inFile[key] == nil {
				im.inFile[key] = idSet(im.kinds[key].ids(ds))
			}
		}
	}
	for key, ids := range ds.Deletes {
		im.deleted[key] = make(map[domain.ID]int, len(ids))
		for i, id := range ids {
			im.deleted[key][id] = i
		}
	}
	err := st.Load(ctx, func(b *bulkload.Bulk) error {
		im.b = b
		if im.progress != nil {
			b.Progress = func(rows int) {
				im.batched += rows
				im.tick()
			}
		}
		if err := im.run(importOrder(all)); err != nil {
			return err
		}
		if err := im.entityIDsDistinct(); err != nil {
			return err
		}
		return im.partnersApart()
	})
	if errors.Is(err, bulkload.ErrSAMLogTaken) && f != nil {
		return Counts{}, f.place(f.samLogTaken(ctx, st, im.takenChunk, opts.Upsert))
	}
	if f != nil {
		err = f.place(err)
	}
	if errors.Is(err, bulkload.ErrSAMLogTaken) {
		return Counts{}, samLogTaken(ctx, st, ds.SAMActionLogs)
	}
	if err != nil {
		return Counts{}, err
	}
	if im.purge {
		st.PurgeDeleted(ctx)
	}
	return im.counts, nil
}

// run writes the kinds in order. Deletes of kinds that nothing references come first, so that
// what they free (a merchant's one active pricing model, a line item's one shipment) is free for
// the file's records; the others come last, each kind's before those it references, once every
// record of the file that may have stopped referring to them has been replaced.
func (im *importer) run(order []kind) error {
	referenced := map[string]bool{}
	for _, k := range order {
		for _, l := range k.links {
			for _, to := range l.to {
				referenced[to] = true
			}
		}
		for _, p := range k.parts {
			referenced[p.to] = true
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		if !referenced[order[i].key] {
			if err := im.deleteAll(&order[i]); err != nil {
				return err
			}
		}
	}
	for _, k := range order {
		write := k.write
		if k.key == samKey && im.file != nil {
			write = (*importer).streamSAMLogs
		}
		if err := write(im); err != nil {
			return err
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		if referenced[order[i].key] {
			if err := im.deleteAll(&order[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// entityKeys are the kinds whose records a SAM action log may name as its entity, by id alone
// (and the read of a page finds the entity, and with it who may see the page, by that id).
var entityKeys = []string{"leads", "merchants", "deploymentOrders", "lineItems", "equipment"}

// entityIDsDistinct refuses an import after which one id names records of two entity kinds: a
// SAM log meant for one would be shown to whoever may see the other (a lead of one partner, a
// merchant of another). It names the file's record where the file holds one of the two.
func (im *importer) entityIDsDistinct() error {
	tables := make([]string, len(entityKeys))
	for i, key := range entityKeys {
		tables[i] = im.kinds[key].table
	}
	id, in, found, err := im.b.SharedID(tables)
	if err != nil || !found {
		return err
	}
	var kinds [2]*kind
	for _, key := range entityKeys {
		for j, t := range in {
			if im.kinds[key].table == t {
				kinds[j] = im.kinds[key]
			}
		}
	}
	path := "id " + string(id)
	for _, k := range kinds {
		if i := slices.Index(k.ids(im.ds), id); i >= 0 {
			path = fmt.Sprintf("%s[%d].id", k.key, i)
			break
		}
	}
	return Errorf(path, "names both a %s and a %s: a SAM action log's entity is found by its id alone, so leads, merchants, deployment orders, line items and equipment may not share one",
		kinds[0].what, kinds[1].what)
}

func idSet(ids []domain.ID) map[domain.ID]bool {
	m := make(map[domain.ID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

type importer struct {
	b     *bulkload.Bulk
	ds    *Dataset
	ring  *secrets.Ring
	all   []kind
	kinds map[string]*kind
	// inFile holds the ids in the file of each kind that something references; known those
	// found in the database.
	inFile, known map[string]map[domain.ID]bool
	// deleted holds the ids of the deletes key, each with its index there.
	deleted map[string]map[domain.ID]int
	upsert  bool
	counts  Counts
	// purge: a record with secrets was deleted or replaced.
	purge    bool
	progress func(done int)
	// batched counts the SAM logs in so far, while the store adds them.
	batched int
	// file, if set, holds the SAM action logs, read from it a chunk at a time (ImportFile);
	// takenChunk is the chunk of them whose insert found an id taken.
	file       *File
	takenChunk int
}

// ref checks that id names a record of one of the kinds to, in the file or in the database, and
// not one the file deletes.
func (im *importer) ref(path string, to []string, id domain.ID) error {
	for _, key := range to {
		if i, ok := im.deleted[key][id]; ok {
			return Errorf(path, "no %s with this id once %s.%s[%d] is deleted", im.kinds[key].what, deletesKey, key, i)
		}
	}
	for _, key := range to {
		if im.inFile[key][id] {
			return nil
		}
		ok, err := im.exists(key, id)
		if err != nil || ok {
			return err
		}
	}
	whats := make([]string, len(to))
	for i, key := range to {
		whats[i] = im.kinds[key].what
	}
	return Errorf(path, "no %s with this id", orList(whats))
}

// orList joins "a", "b" and "c" as "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func (im *importer) exists(key string, id domain.ID) (bool, error) {
	if im.known[key][id] {
		return true, nil
	}
	ok, err := im.b.Exists(im.kinds[key].table, id)
	if err != nil || !ok {
		return false, err
	}
	if im.known[key] == nil {
		im.known[key] = map[domain.ID]bool{}
	}
	im.known[key][id] = true
	return true, nil
}

// conflict names why a record's row was refused by a unique constraint: its id, else the field
// clash names (nil: none to name).
func (im *importer) conflict(path, key string, id domain.ID, clash func(stored bool) error) error {
	dup, err := im.exists(key, id)
	if err != nil {
		return err
	}
	if dup {
		return Errorf(path+".id", "duplicate id %s: already in the database", id)
	}
	if clash != nil {
		if err := clash(true); err != nil {
			return err
		}
	}
	return Errorf(path, "conflicts with a record already in the database or the file")
}

// importSAMLogs hands the logs to the store once every id is known to be a uuid (the store keeps
// them as 16 bytes).
func importSAMLogs(im *importer, logs []domain.SAMActionLog) error {
	for i := range logs {
		if _, ok := logs[i].ID.Bytes(); !ok {
			return Errorf(at("samActionLogs", i)+".id", "not a uuid: %q", string(logs[i].ID))
		}
	}
	replaced := 0
	if im.upsert {
		var err error
		if replaced, err = im.removeStoredSAMLogs(logs); err != nil {
			return err
		}
	}
	if err := im.b.AddSAMLogs(logs); err != nil {
		return err
	}
	im.batched = 0
	im.counts.Added += len(logs) - replaced
	im.counts.Replaced += replaced
	im.tick()
	return nil
}

// importAuditEvents adds the file's audit events. Events with their place in the chain (an
// export's) keep it, links and all: only into a database with no audit events, whose chain they
// then are, so an export imported into an empty database verifies with the same ring. Events
// without one (an older file, or one written by hand) are appended to the chain as new events,
// linked under the active key, after the file's chained ones.
func importAuditEvents(im *importer, events []domain.AuditEvent) error {
	stored, err := im.b.AuditTrailLength()
	if err != nil {
		return err
	}
	ins, err := im.b.Inserter("audit_events", auditlog.Columns)
	if err != nil {
		return err
	}
	defer ins.Close()
	var fresh []domain.AuditEvent
	for i := range events {
		r, path := &events[i], at("auditEvents", i)
		if im.upsert {
			if dup, err := im.b.Exists("audit_events", r.ID); err != nil || dup {
				return cmpOr(err, Errorf(path, "audit events are written by the service and cannot be replaced"))
			}
		}
		if r.Seq == 0 {
			if dup, err := im.b.Exists("audit_events", r.ID); err != nil {
				return err
			} else if dup {
				return Errorf(path+".id", "duplicate id %s: already in the database", r.ID)
			}
			fresh = append(fresh, *r)
			continue
		}
		if stored > 0 {
			return Errorf(path+".seq", "events with their place in the audit chain can be imported only into a database with no audit events (this one has %d)", stored)
		}
		args, err := auditlog.Args(r)
		if err != nil {
			return Errorf(path+".hash", "not hex")
		}
		added, err := ins.Insert(args...)
		if err != nil {
			return err
		}
		if !added {
			return im.conflict(path, "auditEvents", r.ID, nil)
		}
		im.counts.Added++
	}
	if len(fresh) < len(events) {
		// The file's chain is accepted only if it verifies under the ring, from its genesis on.
		if err := im.b.AdoptAuditChain(); err != nil {
			return Errorf("auditEvents", "the audit chain does not verify: %v", err)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	im.counts.Added += len(fresh)
	im.tick()
	return im.b.AppendAudit(fresh)
}

// samLogTaken names the log whose id was taken, after the import has rolled back: the first log of
// the file, in file order, whose id is stored already or repeats an earlier log's.
func samLogTaken(ctx context.Context, st Store, logs []domain.SAMActionLog) error {
	seen := make(map[[16]byte]bool, len(logs))
	ids := make([]domain.ID, 0, samLogIDChunk)
	for start := 0; start < len(logs); start += samLogIDChunk {
		end := min(start+samLogIDChunk, len(logs))
		ids = ids[:0]
		for i := start; i < end; i++ {
			ids = append(ids, logs[i].ID)
		}
		stored, err := st.StoredSAMLogIDs(ctx, ids)
		if err != nil {
			return err
		}
		for i := start; i < end; i++ {
			u, _ := logs[i].ID.Bytes()
			if seen[u] || stored[i-start] {
				return Errorf(at("samActionLogs", i)+".id", "duplicate id %s: already in the database", logs[i].ID)
			}
			seen[u] = true
		}
	}
	return Errorf("samActionLogs", "conflicts with a record already in the database or the file")
}

// Export reads the whole database as a dataset, including what the service produced (merchant
// notes, audit events). Credentials are never exported. SSNs are left out unless ring is given,
// in which case they are opened and exported in plaintext. It reads one consistent snapshot, and
// serving goes on meanwhile.
func Export(ctx context.Context, st Store, ring *secrets.Ring) (*Dataset, error) {
	x := &exporter{ds: &Dataset{}, ring: ring}
	err := st.Dump(ctx, func(sn *bulkload.Snapshot) error {
		x.sn = sn
		for _, k := range kinds() {
			if k.read == nil {
				continue
			}
			if err := k.read(x); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return x.ds, nil
}

type exporter struct {
	sn   *bulkload.Snapshot
	ds   *Dataset
	ring *secrets.Ring
}
