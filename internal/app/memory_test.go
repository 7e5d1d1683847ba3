package app

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for v, want := range map[string]int64{
		"512MiB": 512 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40, "64KiB": 64 << 10, "1000B": 1000, "1000": 1000, "off": math.MaxInt64, "OFF": math.MaxInt64,
	} {
		if got, err := parseMemoryLimit(v); err != nil || got != want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"", "0", "-1MiB", "512MB", "1.5GiB", "lots", "9999999TiB"} {
		if _, err := parseMemoryLimit(v); err == nil {
			t.Errorf("parseMemoryLimit(%q) accepted", v)
		}
	}
	if _, err := loadConfig(envOf(map[string]string{"BACKOFFICE_MEMORY_LIMIT": "lots"})); err == nil {
		t.Error("BACKOFFICE_MEMORY_LIMIT=lots accepted")
	}
}

// serve sets the runtime's soft memory limit: 512 MiB by default, BACKOFFICE_MEMORY_LIMIT or
// --memory-limit when given, and leaves GOMEMLIMIT's alone.
func TestServeSetsTheMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	cases := []struct {
		name string
		vars map[string]string
		want int64
	}{
		{"default", nil, 512 << 20},
		{"BACKOFFICE_MEMORY_LIMIT", map[string]string{"BACKOFFICE_MEMORY_LIMIT": "300MiB"}, 300 << 20},
		{"GOMEMLIMIT wins", map[string]string{"BACKOFFICE_MEMORY_LIMIT": "300MiB", "GOMEMLIMIT": "777MiB"}, 123 << 20},
	}
	for _, c := range cases {
		debug.SetMemoryLimit(123 << 20) // as if the runtime had read GOMEMLIMIT
		servedOps(t, c.vars)
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("%s: memory limit %d, want %d", c.name, got, c.want)
		}
	}
}
