package dataset

import (
	"hash/maphash"
	"math/bits"
)

// bloom is a Bloom filter of SAM log ids: it finds, in memory of a bit or two for every 16 bytes
// of the file (2 MB for a million logs), the ids that may have come before. A few of them have
// not (about one id in 10,000 at the file's usual 180 bytes a log: 107 of the load benchmark's
// million): twice holds them all, and the import tells the real repeats from those exactly,
// counting the ids of twice as it reads the logs again. A map of every id instead takes 38 to 75
// bytes a log and is 6.7× slower (BenchmarkImportJSON): memory that grows with the file.
type bloom struct {
	bits  []uint64
	mask  uint64 // the filter's size in bits, less one (a power of two)
	seed  maphash.Seed
	twice map[[16]byte]bool
}

// bloomHashes is how many bits an id sets: about the fewest false hits at the 11 to 22 bits a log
// the filter gets.
const bloomHashes = 6

// newBloom sizes a filter for a file of size bytes: a bit for every 16 bytes, rounded up to a
// power of two, at least 64 KiB.
func newBloom(size int64) *bloom {
	n := uint64(max(size/16, 1<<19))
	n = 1 << bits.Len64(n-1) // a power of two, so that a bit's index is a mask away
	return &bloom{bits: make([]uint64, n/64), mask: n - 1, seed: maphash.MakeSeed(), twice: map[[16]byte]bool{}}
}

// add sets id's bits, noting it in twice when they were all set already.
func (b *bloom) add(id [16]byte) {
	h := maphash.Comparable(b.seed, id)
	h1, h2 := h, h>>32|1 // double hashing: the k indexes are h1 + i·h2
	all := true
	for i := range uint64(bloomHashes) {
		k := (h1 + i*h2) & b.mask
		w, bit := k/64, uint64(1)<<(k%64)
		all = all && b.bits[w]&bit != 0
		b.bits[w] |= bit
	}
	if all {
		b.twice[id] = true
	}
}
