package trail_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"backoffice/internal/domain"
	"backoffice/internal/trail"
)

// memTree is a tree of n leaves in memory: the proof's own cost, without a database.
type memTree struct {
	hashes []tlog.Hash
}

func newMemTree(b *testing.B, n int) *memTree {
	m := &memTree{}
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = m.hashes[x]
		}
		return out, nil
	})
	e := event()
	for i := range n {
		e.Seq = int64(i) + 1
		hs, err := tlog.StoredHashes(int64(i), trail.Leaf(nil, e), r)
		if err != nil {
			b.Fatal(err)
		}
		m.hashes = append(m.hashes, hs...)
	}
	return m
}

func (m *memTree) AuditHashReader(context.Context) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = m.hashes[x]
		}
		return out, nil
	})
}

func (m *memTree) AuditLeaves(_ context.Context, start, end int64) ([][]byte, error) {
	var out [][]byte
	for i := start; i < end; i++ {
		e, _ := m.AuditEventAt(context.Background(), i)
		out = append(out, trail.Leaf(nil, e))
	}
	return out, nil
}

func (m *memTree) AuditEventAt(_ context.Context, index int64) (domain.AuditEvent, error) {
	e := event()
	e.Seq = index + 1
	return e, nil
}

// BenchmarkProve proves an event of a tree of 2^20 events against its checkpoint (the proof read
// back against the root): the proof's size and time, without the database's reads.
func BenchmarkProve(b *testing.B) {
	const n = 1 << 20
	m := newMemTree(b, n)
	root, err := tlog.TreeHash(n, m.AuditHashReader(context.Background()))
	if err != nil {
		b.Fatal(err)
	}
	note := []byte(fmt.Sprintf("bench/audit\n%d\n%s\n\n— bench/audit AAAA\n", n, base64.StdEncoding.EncodeToString(root[:])))
	b.ResetTimer()
	var size int
	for i := range b.N {
		p, err := trail.Prove(context.Background(), m, int64(i*7919)%n, note)
		if err != nil {
			b.Fatal(err)
		}
		size = len(p.Proof)
	}
	b.ReportMetric(float64(size), "proof-bytes")
}
