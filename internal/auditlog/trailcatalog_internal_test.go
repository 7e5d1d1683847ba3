package auditlog

import (
	"slices"
	"testing"
)

// Each kind of difference is named once, as the log line shows it.
func TestCompareTrailCatalog(t *testing.T) {
	migrated := []string{
		"function\taudit_chain_head()\t\tabc",
		"table\taudit_chain_lock\t\t",
		"table\taudit_events\t\t",
	}
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"as migrated", migrated, nil},
		{"a trigger added", append(slices.Clone(migrated), "trigger\tzz\taudit_events\tdef"), []string{"found: trigger zz on audit_events"}},
		{"row-level security", append(slices.Clone(migrated), "forced row level security\taudit_events\t\t", "policy\tzz\taudit_events\tdef"),
			[]string{"found: forced row level security on audit_events", "found: policy zz on audit_events"}},
		{"a function changed", []string{"function\taudit_chain_head()\t\tdef", migrated[1], migrated[2]}, []string{"changed: function audit_chain_head()"}},
		{"a table missing", migrated[:2], []string{"missing: table audit_events"}},
		{"a view in a table's place", []string{migrated[0], migrated[1], "trigger\tzz\taudit_events\tdef", "view\taudit_events\t\t"},
			[]string{"audit_events is a view, not a table", "found: trigger zz on audit_events"}},
	} {
		if got := compareTrailCatalog(migrated, tc.got); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
