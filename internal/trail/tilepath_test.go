package trail_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/trail"
)

// The paths of c2sp.org/tlog-tiles' own examples, and the edges of each part.
func TestTilePathsOfTheSpec(t *testing.T) {
	cases := []struct {
		path string
		tile tlog.Tile
	}{
		{"0/x001/x234/067", tlog.Tile{H: 8, L: 0, N: 1234067, W: 256}},
		{"0/000", tlog.Tile{H: 8, L: 0, N: 0, W: 256}},
		{"1/067.p/17", tlog.Tile{H: 8, L: 1, N: 67, W: 17}},
		{"2/000.p/1", tlog.Tile{H: 8, L: 2, N: 0, W: 1}},
		{"entries/x001/x234/067.p/255", tlog.Tile{H: 8, L: -1, N: 1234067, W: 255}},
		{"entries/273.p/112", tlog.Tile{H: 8, L: -1, N: 273, W: 112}},
		{"63/x009/x223/x372/x036/x854/x775/807", tlog.Tile{H: 8, L: 63, N: 1<<63 - 1, W: 256}},
		{"0/x001/000", tlog.Tile{H: 8, L: 0, N: 1000, W: 256}},
	}
	for _, c := range cases {
		got, err := trail.ParseTilePath(c.path)
		if err != nil || got != c.tile {
			t.Errorf("ParseTilePath(%q) = %+v, %v; want %+v", c.path, got, err, c.tile)
		}
		if p := trail.TilePath(c.tile); p != c.path {
			t.Errorf("TilePath(%+v) = %q, want %q", c.tile, p, c.path)
		}
	}
}

// Every other spelling is refused, naming the part at fault: a tile has one path.
func TestTilePathsRefused(t *testing.T) {
	cases := map[string]string{
		"":                                    "index",
		"0":                                   "index",
		"00/000":                              "level",
		"64/000":                              "level",
		"-1/000":                              "level",
		"entry/000":                           "level",
		"0/67":                                "index",
		"0/0067":                              "index",
		"0/x000/067":                          "index", // the canonical form of 67 is 067
		"0/001/067":                           "index", // all but the last group begin with x
		"0/x001/x067":                         "index",
		"0/x001/":                             "index",
		"0/x01/067":                           "index",
		"0/+67":                               "index",
		"0/x009/x223/x372/x036/x854/x775/808": "index", // 2^63
		"0/067.p/0":                           "width",
		"0/067.p/256":                         "width",
		"0/067.p/07":                          "width",
		"0/067.p/":                            "width",
		"0/067.p/5/":                          "width",
		"0/067.p/5.p/5":                       "width",
		"0/067/":                              "index",
		"0/067.p":                             "index",
	}
	for p, part := range cases {
		_, err := trail.ParseTilePath(p)
		var pe *trail.PathError
		if !errors.As(err, &pe) || pe.Part != part {
			t.Errorf("ParseTilePath(%q): %v, want a %s error", p, err, part)
		}
	}
}

// The tiles of the spec's example trees: of 70,000 entries, 273 full level 0 tiles, a partial
// level 0 tile of width 112, one full level 1 tile, a partial one of width 17 and a partial level
// 2 tile of width 1; of 256, one full level 0 tile and a partial level 1 tile of width 1.
func TestTilesInTheSpecsTrees(t *testing.T) {
	in := func(l int, n int64, w int, size int64) bool {
		return trail.TileInTree(tlog.Tile{H: 8, L: l, N: n, W: w}, size)
	}
	yes := []struct {
		l    int
		n    int64
		w    int
		size int64
	}{
		{0, 272, 256, 70000}, {-1, 272, 256, 70000}, {0, 273, 112, 70000}, {-1, 273, 112, 70000},
		{1, 0, 256, 70000}, {1, 1, 17, 70000}, {2, 0, 1, 70000},
		{0, 273, 5, 70000}, // an older checkpoint's partial tile
		{0, 0, 256, 256}, {1, 0, 1, 256},
		{7, 0, 127, 1<<63 - 1},
	}
	no := []struct {
		l    int
		n    int64
		w    int
		size int64
	}{
		{0, 273, 256, 70000}, {0, 273, 113, 70000}, {0, 274, 1, 70000}, {1, 1, 18, 70000}, {1, 1, 256, 70000},
		{2, 0, 2, 70000}, {3, 0, 1, 70000}, {1, 0, 2, 256}, {0, 0, 1, 0},
		{7, 0, 128, 1<<63 - 1}, {8, 0, 1, 1<<63 - 1}, {63, 0, 1, 1<<63 - 1},
		{0, 1<<63 - 1, 256, 1<<63 - 1}, {0, 1 << 55, 1, 1<<63 - 1},
	}
	for _, c := range yes {
		if !in(c.l, c.n, c.w, c.size) {
			t.Errorf("tile L%d N%d W%d is in a tree of %d", c.l, c.n, c.w, c.size)
		}
	}
	for _, c := range no {
		if in(c.l, c.n, c.w, c.size) {
			t.Errorf("tile L%d N%d W%d is past a tree of %d", c.l, c.n, c.w, c.size)
		}
	}
}

// FuzzTilePath: any path parses to a tile whose path is the same string, or is refused with a
// part named; never a panic.
func FuzzTilePath(f *testing.F) {
	for _, s := range []string{"0/x001/x234/067", "entries/067.p/5", "63/000", "0/x000/001", "1/", "/", "0/067.p/256"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tile, err := trail.ParseTilePath(p)
		if err != nil {
			var pe *trail.PathError
			if !errors.As(err, &pe) || !strings.Contains("level index width", pe.Part) || pe.Part == "" {
				t.Fatalf("%q: %v", p, err)
			}
			return
		}
		if got := trail.TilePath(tile); got != p {
			t.Fatalf("%q parses to %+v, written %q", p, tile, got)
		}
		_ = trail.TileInTree(tile, 1<<63-1)
	})
}
