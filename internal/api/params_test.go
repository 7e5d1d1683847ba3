package api

import (
	"strconv"
	"testing"
)

func TestParsePage(t *testing.T) {
	for _, c := range []struct {
		page, size string
		hasP, hasS bool
		want       Page
		ok         bool
	}{
		{"", "", false, false, Page{1, 20}, true},
		{"3", "100", true, true, Page{3, 100}, true},
		{"007", "1", true, true, Page{7, 1}, true},
		{"1000000000000000", "", true, false, Page{1000000000000000, 20}, true},
		{"", "", true, false, Page{}, false},
		{"0", "", true, false, Page{}, false},
		{"-1", "", true, false, Page{}, false},
		{"+1", "", true, false, Page{}, false},
		{" 1", "", true, false, Page{}, false},
		{"1.0", "", true, false, Page{}, false},
		{"1e3", "", true, false, Page{}, false},
		{"9007199254740991", "100", true, true, Page{MaxPage, 100}, true},
		{"9007199254740992", "", true, false, Page{}, false},
		{"4611686018427387905", "", true, false, Page{}, false},
		{"99999999999999999999", "", true, false, Page{}, false},
		{"", "101", false, true, Page{}, false},
		{"", "0", false, true, Page{}, false},
		{"", "", false, true, Page{}, false},
	} {
		got, err := ParsePage(c.page, c.size, c.hasP, c.hasS)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParsePage(%q, %q) = %+v, %v; want %+v ok=%v", c.page, c.size, got, err, c.want, c.ok)
		}
	}
}

// FuzzParsePage: no input panics; an accepted page is in range and is exactly what the digits say.
func FuzzParsePage(f *testing.F) {
	for _, s := range [][2]string{{"1", "20"}, {"", ""}, {"0", "101"}, {"+5", " 5"}, {"1e2", "0x10"}, {"٣", "²"},
		{"9223372036854775807", "100"}, {"9223372036854775808", "1"}} {
		f.Add(s[0], s[1], true, true)
	}
	f.Fuzz(func(t *testing.T, page, size string, hasPage, hasSize bool) {
		p, err := ParsePage(page, size, hasPage, hasSize)
		if err != nil {
			return
		}
		if p.Number < 1 || p.Number > MaxPage || p.Size < 1 || p.Size > MaxPageSize {
			t.Fatalf("ParsePage(%q, %q) = %+v: out of range", page, size, p)
		}
		if hasPage {
			if n, err := strconv.ParseInt(page, 10, 64); err != nil || n != p.Number || page[0] == '+' || page[0] == '-' {
				t.Fatalf("page %q read as %d", page, p.Number)
			}
		}
		if hasSize {
			if n, err := strconv.ParseInt(size, 10, 64); err != nil || n != p.Size || size[0] == '+' || size[0] == '-' {
				t.Fatalf("size %q read as %d", size, p.Size)
			}
		}
		// A page past any end must not overflow the offset computation (the store clamps it).
		_ = newMeta(p, 1<<62)
	})
}
