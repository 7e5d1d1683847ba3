package dataset

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"backoffice/internal/domain"
)

// deletesKey is the file's key that lists records to delete, by key and id:
// {"deletes": {"varsheets": ["<id>", …], …}}. Only import --upsert takes it.
const deletesKey = "deletes"

// deletesSection decodes the deletes object: its keys are the file's keys of records, each
// holding an array of ids.
func deletesSection(dst *map[string][]domain.ID) section {
	return section{fast: func(b []byte) (int, error) {
		var m map[string][]domain.ID
		n, err := fastDecode(b, &m)
		if err != nil || m == nil {
			return 0, errZeroRecord
		}
		*dst = m
		return n, nil
	}, decode: func(key string, raw json.RawMessage) error {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil || top == nil {
			return Errorf(key, "expected an object whose keys name kinds of records, each an array of ids")
		}
		m := map[string][]domain.ID{}
		for _, k := range slices.Sorted(maps.Keys(top)) {
			var ids []domain.ID
			if err := json.Unmarshal(top[k], &ids); err != nil {
				return Errorf(key+"."+k, "expected an array of ids")
			}
			m[k] = ids
		}
		*dst = m
		return nil
	}}
}

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
				c.fail(path, "%s is also a record of %s in this file: replace it or delete it, not both", ids[i], k.key)
			}
		}
	}
}
