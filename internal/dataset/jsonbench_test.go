package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"backoffice/internal/domain"
)

// The benchmarks of this file decide whether the import's own JSON code (checkJSON, the lean SAM
// log decoder, the Bloom filter of ids) earns its place beside what the standard library keeps:
// each runs the same file, in the format of bench/gen, through today's code and through the
// well-kept equivalent doing the same work. jsonbench_v2_test.go adds JSON v2's jsontext (in this
// Go only with GOEXPERIMENT=jsonv2). docs/performance.md#the-imports-json has the numbers.
//
//	go test ./internal/dataset -run '^$' -bench 'ImportJSON' -benchmem -cpu 1 -count 6
//	GOEXPERIMENT=jsonv2 go test ./internal/dataset -run '^$' -bench 'ImportJSON' -benchmem -cpu 1 -count 6

// benchLogs is the sample's SAM logs: bench/gen's million at a tenth, with a tenth of its leads,
// principals and line items, so that each part has its share of the bytes.
const benchLogs = 100_000

var benchFileBytes []byte

// benchFile is bench/gen's file (the records written as it writes them) with benchLogs logs.
func benchFile() []byte {
	if benchFileBytes != nil {
		return benchFileBytes
	}
	rnd := rand.New(rand.NewPCG(1, 0x5eed))
	fixed := func(k, n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", k, n) }
	leads, items := benchLogs/100, benchLogs/1000
	var b bytes.Buffer
	section := func(key string, n int, rec func(i int) string) {
		if b.Len() > 2 {
			b.WriteString(",\n")
		}
		b.WriteString(`"` + key + `":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(rec(i))
		}
		b.WriteString("]")
	}
	b.WriteString("{\n")
	partner, user, stamp := fixed(1, 1), fixed(2, 1), "2026-11-01T12:00:00Z"
	section("partners", 1, func(int) string { return fmt.Sprintf(`{"id":%q,"name":"Bench Partner"}`, partner) })
	section("users", 1, func(int) string {
		return fmt.Sprintf(`{"id":%q,"partnerId":null,"email":"bench@example.com","permissions":["*"]}`, user)
	})
	section("cardPlans", 4, func(i int) string {
		return fmt.Sprintf(`{"id":%q,"code":"plan%d","displayName":"Plan %d","sortOrder":%d}`, fixed(4, i), i, i, i)
	})
	section("leads", leads, func(i int) string {
		s := fmt.Sprintf(`{"id":%q,"partnerId":%q,"businessName":"Bench Business %d","midId":null,"serviceAcceptance":`, fixed(5, i), partner, i)
		if i%2 == 0 {
			return s + "null}"
		}
		return s + fmt.Sprintf(`{"configured":true,"selectedCardPlanIds":[%q,%q,%q],"ebtFcsNumber":"1234567","amexProgram":"opt_blue","amexEsaNumber":null,"ebtBenefitMode":"both"}}`,
			fixed(4, 0), fixed(4, 1), fixed(4, 3))
	})
	section("principals", leads, func(i int) string {
		return fmt.Sprintf(`{"id":%q,"leadId":%q,"firstName":"Pat","lastName":"Bench%d","ssn":"%03d-%02d-%04d"}`,
			fixed(6, i), fixed(5, i), i, 100+i%800, 10+i%89, i%10000)
	})
	section("merchants", items/10, func(i int) string {
		return fmt.Sprintf(`{"id":%q,"partnerId":%q,"leadId":null,"name":"Bench Merchant %d"}`, fixed(7, i), partner, i)
	})
	section("deploymentModels", 1, func(int) string {
		return fmt.Sprintf(`{"id":%q,"name":"Bench Terminal","equipmentType":"terminal","workflow":"gateway"}`, fixed(8, 1))
	})
	section("deploymentOrders", items/10, func(i int) string { return fmt.Sprintf(`{"id":%q,"merchantId":%q}`, fixed(9, i), fixed(7, i)) })
	section("lineItems", items, func(i int) string {
		return fmt.Sprintf(`{"id":%q,"orderId":%q,"orderType":"gateway","deploymentModelId":%q,"connectionType":["ip"],"status":"deployed","inventoryUnitId":null,"equipmentId":null,"varsheetId":null,"createdAt":%q,"createdBy":%q,"updatedAt":%q,"updatedBy":%q}`,
			fixed(10, i), fixed(9, i/10), fixed(8, 1), stamp, user, stamp, user)
	})
	actions := []string{"add_equipment_purchase", "add_equipment_purchase_fail", "update_mid", "board_merchant"}
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(-benchLogs * time.Second)
	section(samKey, benchLogs, func(i int) string {
		return fmt.Sprintf(`{"id":%q,"entityId":%q,"action":%q,"actionDate":%q,"samId":%d}`, randomID(rnd), fixed(5, 0),
			actions[i%len(actions)], start.Add(time.Duration(i)*time.Second).Format(time.RFC3339), 100000+i)
	})
	b.WriteString("\n}\n")
	benchFileBytes = b.Bytes()
	return benchFileBytes
}

// randomID is a random version-4 uuid, as bench/gen gives each log.
func randomID(rnd *rand.Rand) string {
	hi, lo := rnd.Uint64()&^0xf000|0x4000, rnd.Uint64()&^(0xc<<60)|0x8<<60
	s := fmt.Sprintf("%016x%016x", hi, lo)
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// samArrayBytes is the file's SAM log array, from its '['.
func samArrayBytes(file []byte) []byte {
	return file[bytes.Index(file, []byte(`"`+samKey+`":[`))+len(samKey)+3:]
}

// BenchmarkImportJSON: the first pass of an import (today), and each of its JSON pieces beside
// the well-kept equivalent that would do the same.
func BenchmarkImportJSON(b *testing.B) {
	file := benchFile()
	b.Run("first_pass/today", func(b *testing.B) {
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			if f, err := ReadFile(bytes.NewReader(file), int64(len(file))); err != nil || f.SAMLogs() != benchLogs {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchLogs*b.N)/b.Elapsed().Seconds(), "logs/s")
	})
	// Every check of checkJSON over the whole file, SAM logs included (a file that is not of the
	// plain shape goes this way, and every other key always does).
	b.Run("check/handwritten", func(b *testing.B) {
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			if fault := checkJSON(file, maxRecord); fault != nil {
				b.Fatal(fault.problem)
			}
		}
	})
	b.Run("check/decoder_token", func(b *testing.B) {
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			if err := tokenCheck(file); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Decoding the SAM logs, one at a time from the array, into the records the import keeps.
	logs := samArrayBytes(file)
	b.Run("sam_logs/handwritten", func(b *testing.B) {
		b.SetBytes(int64(len(logs)))
		for b.Loop() {
			sr := &samReader{s: newJSONStream(bytes.NewReader(logs[1:]), maxValue)}
			n := 0
			for {
				var r domain.SAMActionLog
				ok, problem, err := sr.next(&r, true)
				if err != nil || problem != nil {
					b.Fatal(err, problem)
				}
				if !ok {
					break
				}
				n++
			}
			if n != benchLogs {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(benchLogs*b.N)/b.Elapsed().Seconds(), "logs/s")
	})
	// The decoder's lower bound: reflection alone, without the checks (duplicate names, limits)
	// the lean decoder and checkJSON make.
	b.Run("sam_logs/decoder_decode", func(b *testing.B) {
		b.SetBytes(int64(len(logs)))
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(logs))
			dec.DisallowUnknownFields()
			if _, err := dec.Token(); err != nil {
				b.Fatal(err)
			}
			n := 0
			for dec.More() {
				var r domain.SAMActionLog
				if err := dec.Decode(&r); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != benchLogs {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(benchLogs*b.N)/b.Elapsed().Seconds(), "logs/s")
	})
	// The ids of a million logs, as the first pass meets them: the Bloom filter (sized for a file
	// of a million logs), and a map of every id, grown as a first pass that does not know the
	// count grows it, or sized from the file's size.
	ids := make([][16]byte, 1_000_000)
	rnd := rand.New(rand.NewPCG(2, 2))
	for i := range ids {
		ids[i], _ = domain.ID(randomID(rnd)).Bytes()
	}
	b.Run("ids_1M/bloom", func(b *testing.B) {
		for b.Loop() {
			f := newBloom(int64(len(ids)) * 180)
			for _, id := range ids {
				f.add(id)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*len(ids)), "ns/id")
	})
	b.Run("ids_1M/map", func(b *testing.B) {
		for b.Loop() {
			seen := map[[16]byte]struct{}{}
			for _, id := range ids {
				if _, ok := seen[id]; ok {
					b.Fatal("repeat")
				}
				seen[id] = struct{}{}
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*len(ids)), "ns/id")
	})
	b.Run("ids_1M/map_sized", func(b *testing.B) {
		for b.Loop() {
			seen := make(map[[16]byte]struct{}, len(ids))
			for _, id := range ids {
				if _, ok := seen[id]; ok {
					b.Fatal("repeat")
				}
				seen[id] = struct{}{}
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*len(ids)), "ns/id")
	})
}

// tokenCheck makes checkJSON's checks with encoding/json's Decoder.Token and InputOffset, as far
// as they can: a name twice (in any case), depth, string limits, NUL, the size of a record.
// Token turns invalid UTF-8 into U+FFFD, so the bytes are first checked by utf8.Valid; a lone
// surrogate (\ud800) also comes back as U+FFFD, the same as a real "\ufffd", so no use of Token
// can refuse it: that would take a scan of the bytes of its own.
func tokenCheck(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		object   bool
		wantName bool
		name     string // the member being read (an object's), or the name the array is under
		names    nameSet
		start    int64 // where the current element began (arrays of records)
	}
	var stack []*frame
	limitOf := func() int {
		for k := len(stack) - 1; k >= 0; k-- {
			if stack[k].object {
				if n, ok := longFields[stack[k].name]; ok {
					return n
				}
				break
			}
		}
		return maxText
	}
	// valueDone ends a value in its container: an object wants a name next.
	valueDone := func() error {
		if len(stack) == 0 {
			return nil
		}
		top := stack[len(stack)-1]
		if top.object {
			top.wantName = true
		} else if len(stack) == 2 && dec.InputOffset()-top.start > int64(recordLimit(stack[0].name)) {
			return fmt.Errorf("a record larger than its limit at offset %d", top.start)
		}
		return nil
	}
	for {
		if len(stack) == 2 && !stack[1].object {
			stack[1].start = dec.InputOffset()
		}
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxDepth+1 {
					return fmt.Errorf("nested more than %d deep at offset %d", maxDepth, dec.InputOffset())
				}
				stack = append(stack, &frame{object: t == '{', wantName: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				if err := valueDone(); err != nil {
					return err
				}
			}
		case string:
			if top := stack[len(stack)-1]; top.object && top.wantName {
				if !top.names.add(t) {
					return fmt.Errorf("duplicate name %q at offset %d", t, dec.InputOffset())
				}
				top.name, top.wantName = t, false
				continue
			}
			if strings.IndexByte(t, 0) >= 0 {
				return fmt.Errorf("a NUL character at offset %d", dec.InputOffset())
			}
			if n := utf8.RuneCountInString(t); n > limitOf() {
				return fmt.Errorf("longer than %d characters (%d)", limitOf(), n)
			}
			if err := valueDone(); err != nil {
				return err
			}
		default:
			if err := valueDone(); err != nil {
				return err
			}
		}
	}
}

// Today's code and tokenCheck refuse the same files of the cases they share.
func TestTokenCheckAgrees(t *testing.T) {
	for _, s := range []string{`{"a": 1, "A": 2}`, `{"a": "\u0000"}`, `{"name": "` + strings.Repeat("x", 256) + `"}`,
		`{"body": "` + strings.Repeat("x", 256) + `"}`, strings.Repeat("[", 18) + strings.Repeat("]", 18), "\"\xff\"", `[1, 2`, `{"a": [{"b": 1, "b": 2}]}`} {
		if (checkJSON([]byte(s), maxRecord) == nil) != (tokenCheck([]byte(s)) == nil) {
			t.Errorf("%q: checkJSON %v, tokenCheck %v", s, checkJSON([]byte(s), maxRecord), tokenCheck([]byte(s)))
		}
	}
	if checkJSON(benchFile(), maxRecord) != nil || tokenCheck(benchFile()) != nil {
		t.Fatal("the benchmark's file is refused")
	}
}
