package dataset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// fileOf writes a dataset file whose keys come in the order given: key, records, key, records….
func fileOf(t *testing.T, parts ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("{")
	for k := 0; k < len(parts); k += 2 {
		if k > 0 {
			b.WriteString(",\n")
		}
		v, err := json.Marshal(parts[k+1])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(`"` + parts[k].(string) + `": `)
		b.Write(v)
	}
	b.WriteString("}")
	return b.Bytes()
}

// importBytes imports file as the import command does: ReadFile, then ImportFile.
func importBytes(t *testing.T, st *store.Store, file []byte, opts dataset.Options) (dataset.Counts, error) {
	t.Helper()
	f, err := dataset.ReadFile(bytes.NewReader(file), bytes.NewReader(file))
	if err != nil {
		return dataset.Counts{}, err
	}
	return dataset.ImportFile(context.Background(), st, f, nil, opts)
}

// importInChunks imports file as importBytes does, its SAM logs handed to the store chunk at a
// time, so that a few logs cross chunk boundaries.
func importInChunks(t *testing.T, st *store.Store, file []byte, chunk int, opts dataset.Options) (dataset.Counts, error) {
	t.Helper()
	f, err := dataset.ReadFileInChunks(bytes.NewReader(file), bytes.NewReader(file), chunk)
	if err != nil {
		return dataset.Counts{}, err
	}
	return dataset.ImportFile(context.Background(), st, f, nil, opts)
}

// streamedLogs are logs of two leads, interleaved, numbered from first.
func streamedLogs(first, n int) []domain.SAMActionLog {
	ds := samBase()
	a, b := logs(ds.Leads[0].ID, first, n), logs(ds.Leads[1].ID, first+n, n)
	var out []domain.SAMActionLog
	for i := range a {
		out = append(out, a[i], b[i])
	}
	return out
}

// The logs stream to the store a chunk at a time, before the records they reference in the file:
// every page comes out exact, and the counts are right.
func TestImportFileStreamsLogsInChunks(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ds := samBase()
		all := streamedLogs(0, 25)
		file := fileOf(t, "samActionLogs", all, "leads", ds.Leads, "partners", ds.Partners)
		if f, err := dataset.ReadFileInChunks(bytes.NewReader(file), bytes.NewReader(file), 7); err != nil || dataset.SAMChunks(f) != 8 {
			t.Fatalf("ReadFileInChunks: %v; want the 50 logs in 8 chunks of at most 7", err)
		}
		c, err := importInChunks(t, st, file, 7, dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c != (dataset.Counts{Added: 53}) {
			t.Fatalf("counts %+v", c)
		}
		for _, lead := range ds.Leads {
			var want []domain.SAMActionLog
			for _, l := range all {
				if l.EntityID == lead.ID {
					want = append(want, l)
				}
			}
			if got, total := walk(t, st, lead.ID, 4); !slices.Equal(got, idsInListOrder(want)) || total != 25 {
				t.Fatalf("lead %s: %d logs, total %d", lead.ID, len(got), total)
			}
		}
		// The same file again, with --upsert: everything replaced, the pages as they were.
		if c, err = importInChunks(t, st, file, 7, dataset.Options{Upsert: true}); err != nil || c != (dataset.Counts{Replaced: 53}) {
			t.Fatalf("upsert: %+v, %v", c, err)
		}
		if got, total := walk(t, st, ds.Leads[0].ID, 4); len(got) != 25 || total != 25 {
			t.Fatalf("after the upsert: %d logs, total %d", len(got), total)
		}
	})
}

// A bad log anywhere in the stream (past the first chunks) is named, and nothing of the file is
// kept: the problems the import finds, with the records the first pass has already checked.
func TestImportFileNamesTheLogAndKeepsNothing(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ds := samBase()
		stored := logs(ds.Leads[0].ID, 1000, 3)
		testdb.Import(t, st, &dataset.Dataset{Partners: ds.Partners, Leads: ds.Leads, SAMActionLogs: stored})
		ctx := context.Background()

		unknown := streamedLogs(0, 20)
		unknown[33].EntityID = testdb.SAMID(777)
		repeated := streamedLogs(0, 20)
		repeated[31].ID = repeated[4].ID
		taken := streamedLogs(0, 20)
		taken[29].ID = stored[1].ID
		// Ids that differ only in letter case are the same id (a repeat in the file, or one stored).
		repeatedCase := streamedLogs(0, 20)
		repeatedCase[31].ID = domain.ID(strings.ToUpper(string(repeatedCase[4].ID)))
		takenCase := streamedLogs(0, 20)
		takenCase[29].ID = domain.ID(strings.ToUpper(string(stored[1].ID)))
		deleted := streamedLogs(0, 20)
		deleted[26].ID = stored[2].ID
		for _, c := range []struct {
			name string
			file []byte
			opts dataset.Options
			want string
		}{
			{"unknown entity", fileOf(t, "samActionLogs", unknown, "partners", []domain.Partner{{ID: testdb.SAMID(5), Name: "Q"}}), dataset.Options{},
				"samActionLogs[33].entityId: no lead, merchant, deployment order, line item or equipment with this id"},
			{"repeated id", fileOf(t, "samActionLogs", repeated), dataset.Options{},
				"samActionLogs[31].id: duplicate id " + string(repeated[4].ID)},
			{"repeated id, upsert", fileOf(t, "samActionLogs", repeated), dataset.Options{Upsert: true},
				"samActionLogs[31].id: duplicate id " + string(repeated[4].ID)},
			{"repeated id in capitals", fileOf(t, "samActionLogs", repeatedCase), dataset.Options{},
				"samActionLogs[31].id: duplicate id"},
			{"stored id in capitals", fileOf(t, "samActionLogs", takenCase), dataset.Options{},
				"samActionLogs[29].id: duplicate id"},
			{"stored id", fileOf(t, "samActionLogs", taken), dataset.Options{},
				"samActionLogs[29].id: duplicate id " + string(stored[1].ID) + ": already in the database"},
			{"deleted and given", fileOf(t, "deletes", map[string][]domain.ID{"samActionLogs": {stored[0].ID, deleted[26].ID}}, "samActionLogs", deleted),
				dataset.Options{Upsert: true}, "deletes.samActionLogs[1]: " + string(deleted[26].ID) + " is also a record of samActionLogs in this file"},
		} {
			_, err := importInChunks(t, st, c.file, 7, c.opts)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%s: error %v, want prefix %q", c.name, err, c.want)
			}
			if got, total := walk(t, st, ds.Leads[0].ID, 10); len(got) != 3 || total != 3 {
				t.Errorf("%s: %d logs stored after the failed import, want the 3 from before", c.name, len(got))
			}
			if ok, err := st.IsEmpty(ctx); err != nil || ok {
				t.Fatalf("%s: the database lost its partner", c.name)
			}
		}
	})
}

// A log that repeats an earlier log's id, chunks away, is named by its index and line, by plain
// import and by --upsert (which removes the stored logs the file replaces first, so that the
// repeat still fails the insert rather than replacing its own first copy), and nothing is kept;
// without the repeat, the same file imports, and imports again with --upsert.
func TestImportFileRepeatedLog(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ds := samBase()
		logs := streamedLogs(0, 10)
		repeat := slices.Clone(logs)
		repeat[17].ID = repeat[3].ID
		for _, upsert := range []bool{false, true} {
			file := fileOf(t, "partners", ds.Partners, "leads", ds.Leads, "samActionLogs", repeat)
			_, err := importInChunks(t, st, file, 5, dataset.Options{Upsert: upsert})
			if want := "samActionLogs[17].id: duplicate id " + string(repeat[3].ID) + " (line 3, column "; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("upsert %v: %v, want %q…", upsert, err, want)
			}
			if ok, err := st.IsEmpty(context.Background()); err != nil || !ok {
				t.Fatal("a failed import kept records")
			}
		}
		file := fileOf(t, "partners", ds.Partners, "leads", ds.Leads, "samActionLogs", logs)
		if c, err := importInChunks(t, st, file, 5, dataset.Options{}); err != nil || c.Added != 23 {
			t.Fatalf("import: %+v, %v", c, err)
		}
		if c, err := importInChunks(t, st, file, 5, dataset.Options{Upsert: true}); err != nil || c.Replaced != 23 {
			t.Fatalf("import --upsert: %+v, %v", c, err)
		}
		// A stored log given twice by an upsert: the first copy replaces it, the second is a repeat.
		stored := slices.Clone(logs)
		stored[12].ID = stored[2].ID
		_, err := importInChunks(t, st, fileOf(t, "samActionLogs", stored), 5, dataset.Options{Upsert: true})
		if want := "samActionLogs[12].id: duplicate id " + string(stored[2].ID) + " (line"; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("a stored log twice: %v, want %q…", err, want)
		}
	})
}

// A file changed between the two readings fails the import, and nothing is kept.
func TestImportFileChanged(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ds := samBase()
		file := fileOf(t, "partners", ds.Partners, "leads", ds.Leads, "samActionLogs", streamedLogs(0, 10))
		f, err := dataset.ReadFile(bytes.NewReader(file), bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.LastIndex(file, []byte(`"actionDate"`))
		copy(file[at:], `"actionDatum"`)
		_, err = dataset.ImportFile(context.Background(), st, f, nil, dataset.Options{})
		if err == nil || err.Error() != "the file changed while it was being imported" {
			t.Fatalf("import of a changed file: %v", err)
		}
		if ok, err := st.IsEmpty(context.Background()); err != nil || !ok {
			t.Fatal("a failed import kept records")
		}
	})
}

// Records go in by batches of rows: a refused row deep in a key is named exactly, and before a
// problem found later in the same batch.
func TestImportNamesARefusedRowInABatch(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ds := samBase()
		testdb.Import(t, st, ds)
		var leads []domain.Lead
		for i := range 250 {
			leads = append(leads, domain.Lead{ID: testdb.SAMID(20000 + i), PartnerID: ds.Partners[0].ID, BusinessName: "L"})
		}
		leads[130].ID = ds.Leads[1].ID // stored
		for _, c := range []struct {
			name string
			bad  func(ls []domain.Lead)
			want string
		}{
			{"stored id", func([]domain.Lead) {}, "leads[130].id: duplicate id " + string(ds.Leads[1].ID) + ": already in the database"},
			{"then a bad reference", func(ls []domain.Lead) { ls[160].PartnerID = testdb.SAMID(5) },
				"leads[130].id: duplicate id " + string(ds.Leads[1].ID) + ": already in the database"},
		} {
			ls := slices.Clone(leads)
			c.bad(ls)
			_, err := importBytes(t, st, fileOf(t, "leads", ls), dataset.Options{})
			if err == nil || !strings.HasPrefix(err.Error(), c.want+" (line 1, column 20038)") {
				t.Errorf("%s: %v, want %q and its place", c.name, err, c.want)
			}
		}
		if got := testdb.Export(t, st, nil); len(got.Leads) != 2 {
			t.Fatalf("%d leads stored after the failed imports, want 2", len(got.Leads))
		}
	})
}

// Logs that come newest first (as export writes them) go to the store last chunk first, so that
// each chunk is newer than the stored ones; the pages come out exact either way, and a problem is
// still named by the log's index in the file.
func TestImportFileNewestFirst(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ds := samBase()
		all := streamedLogs(0, 25)
		slices.Reverse(all)
		bad := slices.Clone(all)
		bad[2].EntityID = testdb.SAMID(777)
		_, err := importInChunks(t, st, fileOf(t, "partners", ds.Partners, "leads", ds.Leads, "samActionLogs", bad), 7, dataset.Options{})
		if err == nil || !strings.HasPrefix(err.Error(), "samActionLogs[2].entityId: no lead") {
			t.Fatalf("unknown entity: %v", err)
		}
		file := fileOf(t, "partners", ds.Partners, "leads", ds.Leads, "samActionLogs", all)
		f, err := dataset.ReadFileInChunks(bytes.NewReader(file), bytes.NewReader(file), 7)
		if err != nil || !dataset.NewestFirst(f) {
			t.Fatalf("ReadFile: %v, newest first: %v", err, err == nil && dataset.NewestFirst(f))
		}
		if c, err := dataset.ImportFile(context.Background(), st, f, nil, dataset.Options{}); err != nil || c.Added != 53 {
			t.Fatalf("import: %+v, %v", c, err)
		}
		for _, lead := range ds.Leads {
			var want []domain.SAMActionLog
			for _, l := range all {
				if l.EntityID == lead.ID {
					want = append(want, l)
				}
			}
			if got, total := walk(t, st, lead.ID, 4); !slices.Equal(got, idsInListOrder(want)) || total != 25 {
				t.Fatalf("lead %s: %d logs, total %d", lead.ID, len(got), total)
			}
		}
		oldestFirst := fileOf(t, "samActionLogs", streamedLogs(100, 3))
		if f, err := dataset.ReadFileInChunks(bytes.NewReader(oldestFirst), bytes.NewReader(oldestFirst), 7); err != nil || dataset.NewestFirst(f) {
			t.Fatalf("oldest first read as newest first: %v", err)
		}
	})
}
