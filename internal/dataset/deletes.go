package dataset

import (
	"fmt"
	"maps"
	"slices"

	"backoffice/internal/domain"
)

// deletesKey is the file's key that lists records to delete, by key and id:
// {"deletes": {"varsheets": ["<id>", …], …}}. Only import --upsert takes it.
const deletesKey = "deletes"

// deletes checks the deletes key: known keys of records that an import may delete, each id a
// uuid (made canonical), given once, and not also a record of the file of the same kind.
func (c *checker) deletes(all []kind, ds *Dataset) {
	known := map[string]bool{}
	for _, k := range all {
		known[k.key] = true
	}
	for _, key := range slices.Sorted(maps.Keys(ds.Deletes)) {
		if !known[key] {
			c.fail(deletesKey+"."+key, "unknown key (known keys: %s)", orList(keys()[:len(all)]))
		}
	}
	for _, k := range all {
		ids := ds.Deletes[k.key]
		if len(ids) > 0 && k.serviceWritten {
			c.fail(deletesKey+"."+k.key, "%ss are written by the service and cannot be deleted", k.what)
		}
		if len(ids) == 0 {
			continue
		}
		inFile := idSet(k.ids(ds))
		seen := map[domain.ID]bool{}
		for i := range ids {
			path := fmt.Sprintf("%s.%s[%d]", deletesKey, k.key, i)
			c.id(path, &ids[i])
			if seen[ids[i]] {
				c.fail(path, "%s listed twice", ids[i])
			}
			seen[ids[i]] = true
			if inFile[ids[i]] {
				c.fail(path, "%s is also a record of %s in this file: to replace the stored record, leave its id out of deletes "+
					"(import --upsert replaces a stored record whole with the file's); to delete it, leave the record out of %s", ids[i], k.key, k.key)
			}
		}
	}
}
