package dataset

import (
	"context"
	"errors"
	"fmt"

	"backoffice/internal/domain"
	"backoffice/internal/store/bulkload"
)

// The import's second reading of a file's SAM action logs (ReadFile has checked them, and kept
// none): inside the import's transaction, after the file's other records, the logs are read again
// a chunk at a time, each chunk's references checked (against the file's other records, in
// memory, and the database) and handed to the store. A log whose id is taken, stored already or
// given twice in the file, fails the store's insert (bulkload.ErrSAMLogTaken): after the rollback
// samLogTaken reads the file again to name it. With --upsert, the stored logs that the file
// replaces are removed first, all of them, so that a log the file gives twice still fails the
// insert rather than replacing its own first copy.

// samChunkLogs is how many SAM logs go to the store at a time (File.chunk): what the import holds
// in memory, decoded and with the store's plan of them, grows with it. Fewer cost speed on a big
// file: each chunk's ids go into the ids' index in one sorted run, and a small run into an index
// of millions touches nearly every page of it.
const samChunkLogs = 200_000

// streamSAMLogs imports the file's SAM logs. The store appends an entity's logs cheaply when
// they come oldest first, so a file whose logs come newest first (an export) goes last chunk
// first.
func (im *importer) streamSAMLogs() error {
	f := im.file
	c := &samChunks{im: im, refs: im.kinds[samKey].links[0].to, logs: make([]domain.SAMActionLog, 0, min(f.chunk, f.logs))}
	replaced := 0
	if im.upsert {
		for k := range f.starts {
			logs, err := c.read(k, false)
			if err != nil {
				return err
			}
			n, err := im.removeStoredSAMLogs(logs)
			if err != nil {
				return err
			}
			replaced += n
		}
	}
	for n := range f.starts {
		k := n
		if f.newestFirst {
			k = len(f.starts) - 1 - n
		}
		logs, err := c.read(k, true)
		if err != nil {
			return err
		}
		if err := im.b.AddSAMLogs(logs); err != nil {
			if errors.Is(err, bulkload.ErrSAMLogTaken) {
				im.takenChunk = k
			}
			return err
		}
		im.batched = 0
		im.counts.Added += len(logs)
		im.tick()
	}
	im.counts.Added -= replaced
	im.counts.Replaced += replaced
	return nil
}

// samChunks reads the file's SAM logs chunk by chunk.
type samChunks struct {
	im   *importer
	refs []string              // the kinds a log's entityId may name
	last domain.ID             // the entity last found: the logs of one entity come in runs
	logs []domain.SAMActionLog // the chunk
}

// read reads chunk k of the logs; with refs set, it checks each log's entity, and that the file
// does not also delete it.
func (c *samChunks) read(k int, refs bool) ([]domain.SAMActionLog, error) {
	im, f := c.im, c.im.file
	sr := f.samReaderAt(f.starts[k], k*f.chunk)
	end := min((k+1)*f.chunk, f.logs)
	c.logs = c.logs[:0]
	for sr.i < end {
		var r domain.SAMActionLog
		if ok, err := sr.next(&r); err != nil || !ok {
			return nil, errFileChanged
		}
		i := sr.i - 1
		if refs {
			if d, ok := im.deleted[samKey][r.ID]; ok {
				return nil, Errorf(fmt.Sprintf("%s.%s[%d]", deletesKey, samKey, d),
					"%s is also a record of %s in this file: replace it or delete it, not both", r.ID, samKey)
			}
			if r.EntityID != c.last {
				if err := im.ref(at(samKey, i)+".entityId", c.refs, r.EntityID); err != nil {
					return nil, err
				}
				c.last = r.EntityID
			}
		}
		c.logs = append(c.logs, r)
	}
	if end == f.logs { // the last chunk: the array must end after it, as it did
		var r domain.SAMActionLog
		if ok, err := sr.next(&r); ok || err != nil {
			return nil, errFileChanged
		}
	}
	return c.logs, nil
}

// errFileChanged: the second reading of the file found other logs than the first.
var errFileChanged = &Error{Problem: "the file changed while it was being imported", off: -1}

// samLogIDChunk is how many SAM log ids the naming of a taken id asks the store about at a time.
const samLogIDChunk = 256

// samLogTaken names the log whose id was taken, after the import has rolled back: chunk k's
// insert failed, so one of its ids is stored, or given twice in the file. The first log of the
// file, in file order, whose id is one of chunk k's and is stored (a plain import) or repeats an
// earlier log's, is the one. Only chunk k's ids are held, never the file's.
func (f *File) samLogTaken(ctx context.Context, st Store, k int, upsert bool) error {
	ids := map[[16]byte]bool{} // chunk k's, and whether each is stored
	sr := f.samReaderAt(f.starts[k], k*f.chunk)
	var batch []domain.ID
	ask := func() error {
		stored, err := st.StoredSAMLogIDs(ctx, batch)
		for j, taken := range stored {
			u, _ := batch[j].Bytes()
			ids[u] = taken
		}
		batch = batch[:0]
		return err
	}
	for sr.i < min((k+1)*f.chunk, f.logs) {
		var r domain.SAMActionLog
		if ok, err := sr.next(&r); err != nil || !ok {
			return errFileChanged
		}
		u, _ := r.ID.Bytes()
		ids[u] = false
		if upsert {
			continue // the stored logs the file replaces were removed first: none is asked about
		}
		if batch = append(batch, r.ID); len(batch) == samLogIDChunk {
			if err := ask(); err != nil {
				return err
			}
		}
	}
	if len(batch) > 0 {
		if err := ask(); err != nil {
			return err
		}
	}
	seen := map[[16]byte]bool{}
	sr = f.samReaderAt(f.starts[0], 0)
	for sr.i < f.logs {
		var r domain.SAMActionLog
		if ok, err := sr.next(&r); err != nil || !ok {
			return errFileChanged
		}
		u, _ := r.ID.Bytes()
		if stored, ofChunk := ids[u]; ofChunk {
			switch {
			case stored:
				return Errorf(at(samKey, sr.i-1)+".id", "duplicate id %s: already in the database", r.ID)
			case seen[u]:
				return Errorf(at(samKey, sr.i-1)+".id", "duplicate id %s", r.ID)
			}
			seen[u] = true
		}
	}
	return Errorf(samKey, "conflicts with a record already in the database or the file")
}
