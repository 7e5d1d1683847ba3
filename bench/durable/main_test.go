package main

import "testing"

// A request naming a principal writes a row naming it (decrypt_many's spread); any other path
// writes -target's, as decrypt's rows name its one principal.
func TestTargetOf(t *testing.T) {
	const dflt = "00000006-0000-4000-8000-000000000001"
	for path, want := range map[string]string{
		"/decrypt_many/00000006-0000-4000-8000-000000000007": "00000006-0000-4000-8000-000000000007",
		"/decrypt":                dflt,
		"/decrypt_many/":          dflt,
		"/decrypt_many/not-an-id": dflt,
		"/":                       dflt,
		"/decrypt_many/00000006-0000-4000-8000-000000000007/x": dflt,
	} {
		if got := targetOf(path, dflt); got != want {
			t.Errorf("targetOf(%q) = %q, want %q", path, got, want)
		}
	}
}
