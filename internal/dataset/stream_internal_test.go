package dataset

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/domain"
)

func readFileString(s string) (*File, error) {
	return ReadFile(strings.NewReader(s), int64(len(s)))
}

// ReadFile refuses what Read refuses, with the same error, but for a SAM log repeating an earlier
// one: that is the import's to find (it only marks the id), with the logs out of memory.
func TestReadFileNamesTheProblem(t *testing.T) {
	cases := append(append(readProblems[:0:0], readProblems...), fallbackProblems...)
	for _, c := range cases {
		f, err := readFileString(c.file)
		if c.name == "duplicate log" {
			if err != nil || len(f.maybeTaken) != 1 {
				t.Errorf("%s: %v, %d ids marked", c.name, err, len(f.maybeTaken))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		_, readErr := Read(strings.NewReader(c.file))
		if err != nil && readErr != nil && err.Error() != readErr.Error() {
			t.Errorf("%s: ReadFile says %q, Read %q", c.name, err, readErr)
		}
	}
}

// samLogJSON is one log as a file holds it.
func samLogJSON(n int, entity string, date string) string {
	return fmt.Sprintf(`{"id": "00000000-0000-4000-9000-%012d", "entityId": %q, "action": "a", "actionDate": %q, "samId": %d}`, n, entity, date, n)
}

// samArray is n good logs, with bad in place of the log at index at (none when at < 0).
func samArray(n, at int, bad string) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		if i == at {
			b.WriteString(bad)
			continue
		}
		b.WriteString(samLogJSON(i, l1, "2026-01-01T00:00:00Z"))
	}
	b.WriteString("]")
	return b.String()
}

// A problem with a log deep in a long array (past the stream's first buffer) names the log and
// field, and the key's place among the others does not matter.
func TestReadFileNamesTheLogInTheMiddle(t *testing.T) {
	const n, at = 20000, 12345 // about 3 MB: the stream's buffer is refilled
	for _, c := range []struct{ name, bad, want string }{
		{"bad date", samLogJSON(at, l1, "yesterday"), "samActionLogs[12345]: "},
		{"bad entity", samLogJSON(at, "x", "2026-01-01T00:00:00Z"), `samActionLogs[12345].entityId: not a uuid: "x"`},
		{"wrong type", `{"id": "` + p1 + `", "samId": "1"}`, "samActionLogs[12345].samId: expected a number"},
		{"unknown field", `{"id": "` + p1 + `", "sam": 1}`, `samActionLogs[12345]: unknown field "sam"`},
		{"null", `null`, "samActionLogs[12345]: expected an object, got null"},
		{"escaped, fine but for the action", `{"id": "\u0030` + p1[1:] + `", "entityId": "` + l1 + `", "action": "\t", "actionDate": "2026-01-01T00:00:00Z"}`,
			"samActionLogs[12345].action: required"},
		{"broken", `{"id": "` + p1 + `",, }`, "samActionLogs[12345]: invalid character ','"},
		{"too large", `{"action": "` + strings.Repeat("a", 3*maxSAMLog) + `"}`, "samActionLogs[12345]: larger than"},
	} {
		for _, order := range []string{`{"samActionLogs": %s, "partners": []}`, `{"partners": [], "samActionLogs": %s}`} {
			_, err := readFileString(fmt.Sprintf(order, samArray(n, at, c.bad)))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%s: error %v, want prefix %q", c.name, err, c.want)
			}
		}
	}
	// A well-formed file of the same size reads, its logs counted and none kept.
	f, err := readFileString(`{"samActionLogs": ` + samArray(n, -1, "") + `, "partners": [{"id": "` + p1 + `", "name": "P"}]}`)
	if err != nil || f.SAMLogs() != n || len(f.ds.SAMActionLogs) != 0 || len(f.ds.Partners) != 1 || f.Records() != n+1 {
		t.Fatalf("ReadFile: %v, %+v", err, f)
	}
}

// The file's structure around and inside the SAM log array is checked as encoding/json does.
func TestReadFileStructure(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{``, "not a JSON object: unexpected end of JSON input"},
		{`{"samActionLogs": [`, "not a JSON object: unexpected end of JSON input"},
		{`{"samActionLogs": [` + samLogJSON(1, l1, "2026-01-01T00:00:00Z") + ` ` + samLogJSON(2, l1, "2026-01-01T00:00:00Z") + `]}`,
			`not a JSON object: invalid character '{' after array element`},
		{`{"samActionLogs": [] "partners": []}`, `not a JSON object: invalid character '"' after object key:value pair`},
		{`{"samActionLogs" []}`, `not a JSON object: invalid character '[' after object key`},
		{`{samActionLogs: []}`, `not a JSON object: invalid character 's' looking for beginning of object key string`},
		{`{"samActionLogs": {}}`, `samActionLogs: expected an array of objects`},
		{`{"samActionLogs": []} x`, `unexpected data after the JSON object`},
	} {
		if _, err := readFileString(c.file); err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %q", c.file, err, c.want)
		}
	}
	// A key given twice counts as its last value, as encoding/json has it.
	f, err := readFileString(`{"samActionLogs": [null], "samActionLogs": ` + samArray(3, -1, "") + `}`)
	if err != nil || f.SAMLogs() != 3 {
		t.Fatalf("repeated key: %v", err)
	}
	f, err = readFileString(`{"samActionLogs": ` + samArray(3, -1, "") + `, "samActionLogs": null}`)
	if err != nil || f.SAMLogs() != 0 || f.sam != -1 {
		t.Fatalf("repeated key, null last: %v", err)
	}
}

// The valid file reads as Read reads it, but for its logs, which stay in the file.
func TestReadFileAsRead(t *testing.T) {
	f, err := readFileString(validFile)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Read(strings.NewReader(validFile))
	if err != nil {
		t.Fatal(err)
	}
	ds.SAMActionLogs = nil
	if diff := cmp.Diff(ds, f.ds); diff != "" || f.SAMLogs() != 2 || f.Records() != ds.Records()+2 {
		t.Fatalf("ReadFile and Read differ (-Read +ReadFile): %s", diff)
	}
}

// The filter marks every id given twice, and few given once.
func TestBloomMarksRepeats(t *testing.T) {
	const n = 200_000
	b := newBloom(n * 180) // a file of n logs
	id := func(k int) [16]byte {
		u, _ := domain.ID(fmt.Sprintf("00000000-0000-4000-9000-%012d", k)).Bytes()
		return u
	}
	for k := range n {
		b.add(id(k))
	}
	if len(b.twice) > n/100 {
		t.Errorf("%d of %d ids marked with no repeat", len(b.twice), n)
	}
	for k := 0; k < n; k += 1000 {
		if b.add(id(k)); !b.twice[id(k)] {
			t.Fatalf("id %d given twice, not marked", k)
		}
	}
}

// FuzzReadFile: no input panics, and ReadFile accepts what Read accepts (but for SAM logs that
// repeat an id, the import's to refuse), with the same records but the SAM logs, which it counts.
func FuzzReadFile(f *testing.F) {
	f.Add([]byte(validFile))
	f.Add([]byte(`{"samActionLogs": [null], "samActionLogs": []}`))
	f.Add([]byte(`{"samActionLogs": null, "partners": [{"id": "` + p1 + `", "name": "P"}]}`))
	f.Add([]byte(`{"samActionLogs": [{"id": "\u0030` + p1[1:] + `", "entityId": "` + l1 + `", "action": "a", "actionDate": "2026-01-01T00:00:00Z"}]}`))
	for _, c := range readProblems {
		f.Add([]byte(c.file))
	}
	for _, logs := range samLogSeeds {
		f.Add([]byte(`{"samActionLogs": ` + logs + `}`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := ReadFile(bytes.NewReader(b), int64(len(b)))
		ds, rerr := Read(bytes.NewReader(b))
		if rerr != nil && strings.Contains(rerr.Error(), ".id: duplicate id") && strings.HasPrefix(rerr.Error(), "samActionLogs[") {
			return // a repeated log id: ReadFile only marks it
		}
		if (err == nil) != (rerr == nil) {
			t.Fatalf("ReadFile: %v; Read: %v", err, rerr)
		}
		if err != nil {
			return
		}
		logs := len(ds.SAMActionLogs)
		ds.SAMActionLogs = nil
		if diff := cmp.Diff(ds, file.ds); diff != "" || file.SAMLogs() != logs {
			t.Fatalf("datasets differ (-Read +ReadFile), %d logs against %d:\n%s", file.SAMLogs(), logs, diff)
		}
	})
}
