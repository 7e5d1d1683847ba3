package dataset

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"backoffice/internal/domain"
	"backoffice/internal/store/bulkload"
)

// rowWriter writes a kind's rows: inserts for a plain import (an id stored already is a
// duplicate), upserts for import --upsert (an id stored already is replaced whole).
type rowWriter struct {
	im  *importer
	k   *kind
	ins *bulkload.Batcher
	up  *bulkload.Upserter
}

func (im *importer) writer(k *kind, columns string) (*rowWriter, error) {
	w := &rowWriter{im: im, k: k}
	var err error
	if im.upsert && !k.serviceWritten {
		w.up, err = im.b.Upserter(k.table, columns)
	} else {
		w.ins = im.b.Batcher(k.table, columns)
	}
	return w, err
}

func (w *rowWriter) close() {
	if w.ins != nil {
		w.ins.Close()
	}
	if w.up != nil {
		w.up.Close()
	}
}

// flush writes the rows still queued, and returns the problem of the first one refused; err, a
// problem found after them, if none was.
func (w *rowWriter) flush(err error) error {
	if w.ins != nil {
		if ferr := w.ins.Flush(); ferr != nil {
			return ferr
		}
	}
	return err
}

// put writes the row of the record at path, whose id is id. Inserts go in batches: a row that is
// refused is named when its batch runs (at the latest, at flush). clash names the record's field
// that a unique index refused (see spec.clash).
func (w *rowWriter) put(path string, id domain.ID, args []any, clash func(stored bool) error) error {
	im := w.im
	if w.up == nil {
		im.counts.Added++ // a refused row fails the import: no count is reported then
		im.tick()
		return w.ins.Add(func() error {
			if dup, err := im.exists(w.k.key, id); err == nil && dup && im.upsert {
				return Errorf(path, "%ss are written by the service and cannot be replaced", w.k.what)
			}
			return im.conflict(path, w.k.key, id, clash)
		}, args...)
	}
	stored, err := im.b.Exists(w.k.table, id)
	if err != nil {
		return err
	}
	if stored {
		for _, p := range w.k.parts {
			if err := im.b.DeleteWhere(p.table, p.owner, id); err != nil {
				return err
			}
		}
		im.purge = im.purge || w.k.sealed
	}
	if err := w.up.Upsert(args...); err != nil {
		if errors.Is(err, bulkload.ErrRowConflict) {
			// The failed statement ended what the transaction can ask (PostgreSQL).
			if err := clash(false); err != nil {
				return err
			}
			return Errorf(path, "conflicts with another record already in the database or the file")
		}
		return err
	}
	if stored {
		im.counts.Replaced++
	} else {
		im.counts.Added++
	}
	im.tick()
	return nil
}

// tick reports progress now and then.
func (im *importer) tick() {
	if im.progress != nil {
		im.progress(im.counts.Total() + im.batched)
	}
}

// deleteAll removes the records the deletes key lists under k's key.
func (im *importer) deleteAll(k *kind) error {
	for i, id := range im.ds.Deletes[k.key] {
		if err := im.delete(k, fmt.Sprintf("%s.%s[%d]", deletesKey, k.key, i), id); err != nil {
			return err
		}
	}
	return nil
}

// delete removes one stored record, with its parts, once nothing stored refers to it. A record
// that is not stored is an error: a sync that deletes what is not there has lost track.
func (im *importer) delete(k *kind, path string, id domain.ID) error {
	if k.table == samLogTable {
		removed, err := im.b.RemoveSAMLog(id)
		if err != nil || !removed {
			return cmpOr(err, Errorf(path, "no %s with this id", k.what))
		}
	} else {
		stored, err := im.b.Exists(k.table, id)
		if err != nil || !stored {
			return cmpOr(err, Errorf(path, "no %s with this id", k.what))
		}
		if err := im.unused(path, k.key, id); err != nil {
			return err
		}
		for _, p := range k.parts {
			if err := im.b.DeleteWhere(p.table, p.owner, id); err != nil {
				return err
			}
		}
		if _, err := im.b.Delete(k.table, id); err != nil {
			return err
		}
	}
	im.purge = im.purge || k.sealed
	im.counts.Deleted++
	im.tick()
	return nil
}

// cmpOr is err if there is one, else the file's problem.
func cmpOr(err error, problem *Error) error {
	if err != nil {
		return err
	}
	return problem
}

const samLogTable = "sam_action_logs"

// unused refuses the delete of a record of key that a stored record still refers to, naming the
// first such referrer it finds: by the kinds' links and parts.
func (im *importer) unused(path, key string, id domain.ID) error {
	for _, r := range im.all {
		for _, l := range r.links {
			if !contains(l.to, key) {
				continue
			}
			var ref domain.ID
			var found bool
			var err error
			if r.table == samLogTable {
				ref, found, err = im.b.SAMLogOf(id)
			} else {
				ref, found, err = im.b.Referrer(r.table, "id", l.column, id)
			}
			if err != nil {
				return err
			}
			if found {
				return Errorf(path, "still used by %s[%s].%s", r.key, ref, l.field)
			}
		}
		for _, p := range r.parts {
			if p.to != key {
				continue
			}
			ref, found, err := im.b.Referrer(p.table, p.owner, p.column, id)
			if err != nil {
				return err
			}
			if found {
				return Errorf(path, "still used by %s[%s].%s", r.key, ref, p.field)
			}
		}
	}
	return nil
}

func contains(keys []string, key string) bool {
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}

// snake is the column of a field of the file: varsheetId is varsheet_id.
func snake(field string) string {
	var b strings.Builder
	for _, r := range field {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// removeStoredSAMLogs removes the stored logs that logs replace (those whose ids are stored),
// saying how many: AddSAMLogs then adds them as new ones, at their new positions.
func (im *importer) removeStoredSAMLogs(logs []domain.SAMActionLog) (int, error) {
	ids := make([]domain.ID, len(logs))
	for i := range logs {
		ids[i] = logs[i].ID
	}
	stored, err := im.b.StoredSAMLogIDs(ids)
	if err != nil {
		return 0, err
	}
	var replaced []domain.ID
	for i, ok := range stored {
		if ok {
			replaced = append(replaced, logs[i].ID)
		}
	}
	return im.b.RemoveSAMLogs(replaced)
}
