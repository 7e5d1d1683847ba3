package dataset

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"backoffice/internal/cputime"
	"backoffice/internal/domain"
)

// BenchmarkSAMLogs decides whether the lean SAM log decoder earns its place beside the library:
// the logs of bench/gen's file (a million, one to a line, random ids, one entity), read as the
// import reads each of them, twice: jsontext finding the log and the lean decoder decoding it
// ("lean"), and the way of every other record ("library": walker's checks on jsontext's tokens,
// then JSON v2's Unmarshal). Both check the log as the import does (canonical ids, an action, a
// date).
//
//	go test ./internal/dataset -run '^$' -bench SAMLogs -benchmem -cpu 1 -count 6
func BenchmarkSAMLogs(b *testing.B) {
	const n = 1_000_000
	array := benchSAMArray(n)
	b.Run("lean", func(b *testing.B) {
		b.SetBytes(int64(len(array)))
		cpu := cputime.Process()
		for b.Loop() {
			sr := benchSAMReader(array)
			for {
				var r domain.SAMActionLog
				ok, err := sr.next(&r)
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					break
				}
			}
			if sr.i != n {
				b.Fatal(sr.i)
			}
		}
		reportPerLog(b, n, cpu)
	})
	b.Run("library", func(b *testing.B) {
		b.SetBytes(int64(len(array)))
		cpu := cputime.Process()
		for b.Loop() {
			sr := benchSAMReader(array)
			w := &walker{dec: sr.dec, lim: sr.lim}
			for ; sr.dec.PeekKind() == '{'; sr.i++ {
				var r domain.SAMActionLog
				path := []step{{name: samKey}, {index: sr.i}}
				at := nextOffset(sr.dec)
				sr.lim.from(at, maxRecord)
				raw, err := w.record(path, at, maxRecord)
				if err == nil {
					err = decodeRecord(raw, 0, path, &r)
				}
				if err == nil {
					err = sr.check(&r)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			if sr.i != n {
				b.Fatal(sr.i)
			}
		}
		reportPerLog(b, n, cpu)
	})
}

// benchSAMReader reads the logs of array, from its '['.
func benchSAMReader(array []byte) *samReader {
	lim := &budget{r: bytes.NewReader(array)}
	sr := &samReader{dec: jsontext.NewDecoder(lim), lim: lim, again: bytes.NewReader(array)}
	lim.from(0, maxRecord)
	sr.dec.ReadToken()
	return sr
}

// benchSAMArray is an array of n logs as bench/gen writes them.
func benchSAMArray(n int) []byte {
	rnd := rand.New(rand.NewPCG(1, 0x5eed))
	actions := []string{"add_equipment_purchase", "add_equipment_purchase_fail", "update_mid", "board_merchant"}
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(-time.Duration(n) * time.Second)
	var b bytes.Buffer
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		hi, lo := rnd.Uint64()&^0xf000|0x4000, rnd.Uint64()&^(0xc<<60)|0x8<<60
		id := fmt.Sprintf("%016x%016x", hi, lo)
		fmt.Fprintf(&b, `{"id":"%s","entityId":"00000005-0000-4000-8000-000000000000","action":%q,"actionDate":%q,"samId":%d}`,
			strings.Join([]string{id[:8], id[8:12], id[12:16], id[16:20], id[20:]}, "-"), actions[i%len(actions)],
			start.Add(time.Duration(i)*time.Second).Format(time.RFC3339), 100000+i)
	}
	b.WriteString("]")
	return b.Bytes()
}

// reportPerLog reports the time on the clock and the CPU time a log took, since cpu.
func reportPerLog(b *testing.B, n int, cpu time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/log")
	if cpu >= 0 {
		b.ReportMetric(float64((cputime.Process()-cpu).Nanoseconds())/float64(n*b.N), "cpu-ns/log")
	}
}
