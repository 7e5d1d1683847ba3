package dataset

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The table of kinds and the Dataset type list the same keys in the same order: a kind missing
// from the table would be neither read, imported nor exported, and Write writes the fields in
// their order.
func TestKindsAreDatasetFields(t *testing.T) {
	var fields []string
	typ := reflect.TypeFor[Dataset]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	if got := keys(); !slices.Equal(got, fields) {
		t.Errorf("kinds = %v\nDataset fields = %v", got, fields)
	}
}

// Every kind is imported after the kinds it references, whatever order the table lists them in.
func TestImportOrderPutsReferencesFirst(t *testing.T) {
	all := kinds()
	for _, list := range [][]kind{all, reversed(all)} {
		order := importOrder(list)
		if len(order) != len(all) {
			t.Fatalf("import order has %d kinds, want %d", len(order), len(all))
		}
		done := map[string]bool{}
		for _, k := range order {
			for _, to := range k.refs {
				if !done[to] {
					t.Errorf("%s is imported before %s, which it references", k.key, to)
				}
			}
			done[k.key] = true
		}
	}
}

func reversed(all []kind) []kind {
	out := slices.Clone(all)
	slices.Reverse(out)
	return out
}
