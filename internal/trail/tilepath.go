package trail

import (
	"errors"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// TileHeight is the height of the trail's tiles: c2sp.org/tlog-tiles fixes it at 8, 256 hashes
// (or entries) a full tile.
const TileHeight = 8

// TileWidth is the number of hashes of a full tile.
const TileWidth = 1 << TileHeight

// maxLevel is the highest level c2sp.org/tlog-tiles allows.
const maxLevel = 63

// PathError says which part of a tile path is malformed: Part is "level", "index" or "width".
type PathError struct {
	Part, Problem string
}

func (e *PathError) Error() string { return "tile " + e.Part + ": " + e.Problem }

// TilePath is the c2sp.org/tlog-tiles path of t below the log's prefix, without the leading
// "tile/": "<L>/<N>[.p/<W>]", or "entries/<N>[.p/<W>]" for an entry bundle (t.L == -1, the
// data tile of golang.org/x/mod/sumdb/tlog). x/mod's Tile.Path is the Go checksum database's
// form, which differs (it names the height and spells a partial tile otherwise).
func TilePath(t tlog.Tile) string {
	level := "entries"
	if t.L >= 0 {
		level = strconv.Itoa(t.L)
	}
	p := level + "/" + formatIndex(t.N)
	if t.W < TileWidth {
		p += ".p/" + strconv.Itoa(t.W)
	}
	return p
}

// formatIndex writes n in groups of three digits, every group but the last prefixed with x:
// 1234067 is x001/x234/067.
func formatIndex(n int64) string {
	s := strconv.FormatInt(n, 10)
	if pad := (3 - len(s)%3) % 3; pad > 0 {
		s = strings.Repeat("0", pad) + s
	}
	var b strings.Builder
	for i := 0; i < len(s); i += 3 {
		if i+3 < len(s) {
			b.WriteString("x" + s[i:i+3] + "/")
		} else {
			b.WriteString(s[i:])
		}
	}
	return b.String()
}

// ParseTilePath reads what TilePath writes, and refuses every other spelling, so that a tile has
// one path (a cache holds it once): a level 0 to 63 or "entries", the index in its canonical
// groups (no group of leading zeros, x000/067 is not 67), a width 1 to 255 for a partial tile,
// numbers without leading zeros. The tile's height is TileHeight, a full tile's width TileWidth.
func ParseTilePath(p string) (tlog.Tile, error) {
	t := tlog.Tile{H: TileHeight, W: TileWidth}
	level, rest, ok := strings.Cut(p, "/")
	if !ok {
		return t, &PathError{"index", "missing: the path is tile/<level>/<index>[.p/<width>]"}
	}
	if level == "entries" {
		t.L = -1
	} else {
		l, err := parseDecimal(level, maxLevel)
		if err != nil {
			return t, &PathError{"level", "must be entries or a whole number from 0 to 63 without leading zeros"}
		}
		t.L = int(l)
	}
	index, width, partial := strings.Cut(rest, ".p/")
	n, err := parseIndex(index)
	if err != nil {
		return t, &PathError{"index", err.Error()}
	}
	t.N = n
	if partial {
		w, err := parseDecimal(width, TileWidth-1)
		if err != nil || w == 0 {
			return t, &PathError{"width", "must be a whole number from 1 to 255 without leading zeros"}
		}
		t.W = int(w)
	}
	return t, nil
}

var errIndex = errors.New("must be groups of three digits, all but the last prefixed with x (1234067 is x001/x234/067), without a leading group of zeros")

// parseIndex reads an index in its groups of three digits.
func parseIndex(s string) (int64, error) {
	groups := strings.Split(s, "/")
	var digits strings.Builder
	for i, g := range groups {
		if i < len(groups)-1 {
			var ok bool
			if g, ok = strings.CutPrefix(g, "x"); !ok {
				return 0, errIndex
			}
		}
		if len(g) != 3 || strings.Trim(g, "0123456789") != "" {
			return 0, errIndex
		}
		if i == 0 && len(groups) > 1 && g == "000" {
			return 0, errIndex
		}
		digits.WriteString(g)
	}
	n, err := strconv.ParseInt(digits.String(), 10, 64)
	if err != nil {
		return 0, errors.New("too large: an index is below 2^63")
	}
	return n, nil
}

// parseDecimal reads a whole number from 0 to limit written without leading zeros.
func parseDecimal(s string, limit int64) (int64, error) {
	if s == "" || len(s) > 1 && s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a decimal")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > limit {
		return 0, errors.New("out of range")
	}
	return n, nil
}

// TileInTree tells whether the tree of size n holds every hash (or entry) of t: a tile is served
// only once its bytes are fixed. A partial tile narrower than the tree's stays in it: a client
// holding an older checkpoint reads the partial tiles of that checkpoint's size.
func TileInTree(t tlog.Tile, n int64) bool {
	level := max(t.L, 0)
	if t.N < 0 || t.W < 1 || t.W > TileWidth || TileHeight*level >= 63 {
		return false
	}
	// In units of the tile's hashes (each 2^(8L) leaves): the tile needs N*256+W of them.
	units := n >> (TileHeight * level)
	return t.N <= (units-int64(t.W))/TileWidth && t.N*TileWidth+int64(t.W) <= units
}
