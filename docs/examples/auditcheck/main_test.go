package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// writeTree writes the tiles and entry bundles of a tree of leaves into a directory, as -save
// would have, and returns the tree.
func writeTree(t *testing.T, dir string, leaves [][]byte) tlog.Tree {
	t.Helper()
	var hashes []tlog.Hash
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	var bundle []byte
	for i, l := range leaves {
		hs, err := tlog.StoredHashes(int64(i), l, reader)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, hs...)
		bundle = binary.BigEndian.AppendUint16(bundle, uint16(len(l)))
		bundle = append(bundle, l...)
	}
	n := int64(len(leaves))
	write := func(path string, b []byte) {
		name := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tile := range tlog.NewTiles(8, 0, n) {
		data, err := tlog.ReadTileData(tile, reader)
		if err != nil {
			t.Fatal(err)
		}
		write(tilePath(tile.L, tile.N, tile.W), data)
	}
	write(tilePath(-1, 0, int(n)), bundle)
	root, err := tlog.TreeHash(n, reader)
	if err != nil {
		t.Fatal(err)
	}
	return tlog.Tree{N: n, Hash: root}
}

// A tree whose leaf is not 64 bytes (a tag and an event hash) is refused, naming the leaf, not
// read past its end; tiles that are not the checkpoint's tree's are refused before any bundle.
func TestScanRefusesALeafOfAnotherSize(t *testing.T) {
	dir := t.TempDir()
	tag := bytes.Repeat([]byte{7}, sha256.Size)
	good := append(bytes.Clone(tag), make([]byte, sha256.Size)...)
	tree := writeTree(t, dir, [][]byte{good, tag[:10], good})
	tiles := &tileClient{dir: dir, cache: map[string][]byte{}}
	_, _, err := scanTags(tiles, tree, map[string][]byte{"k1": tag}, 0)
	if err == nil || !strings.Contains(err.Error(), "leaf 1 is not a 64-byte leaf") {
		t.Fatalf("a 10-byte leaf: %v", err)
	}
	other := writeTree(t, t.TempDir(), [][]byte{good, good, good})
	if _, _, err := scanTags(&tileClient{dir: dir, cache: map[string][]byte{}}, other, map[string][]byte{"k1": tag}, 0); err == nil || !strings.Contains(err.Error(), "the tree's root from its tiles") {
		t.Fatalf("the tiles of another tree: %v", err)
	}
}
