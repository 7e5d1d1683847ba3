package dataset

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"backoffice/internal/domain"
)

func readFileString(s string) (*File, error) {
	return ReadFile(strings.NewReader(s), strings.NewReader(s))
}

// ReadFile refuses what Read refuses, with the same error, but for a SAM log repeating an earlier
// one: that is the import's to find, with the logs out of memory.
func TestReadFileNamesTheProblem(t *testing.T) {
	cases := append(append(readProblems[:0:0], readProblems...), fallbackProblems...)
	for _, c := range cases {
		f, err := readFileString(c.file)
		if c.name == "duplicate log" {
			if err != nil || f.logs != 2 {
				t.Errorf("%s: %v", c.name, err)
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

// One set of rules holds a SAM log, whichever reader meets it: a log that breaks one after a run
// of logs of its entity (which the stream reader takes without parsing the entity again) is
// refused by ReadFile as by Read, naming the same field; a run that names its entity in another
// letter case reads, canonical.
func TestSAMLogRulesAreTheSameInEitherReader(t *testing.T) {
	good := samLogJSON(1, l1, "2026-01-01T00:00:00Z")
	for _, c := range []struct{ name, bad, want string }{
		{"bad id", strings.Replace(samLogJSON(2, l1, "2026-01-01T00:00:00Z"), `"id": "00000000-0000-4000-9000-000000000002"`, `"id": "x"`, 1), `samActionLogs[1].id: not a uuid: "x"`},
		{"blank action", strings.Replace(samLogJSON(2, l1, "2026-01-01T00:00:00Z"), `"action": "a"`, `"action": " "`, 1), "samActionLogs[1].action: required"},
		{"no date", strings.Replace(samLogJSON(2, l1, "2026-01-01T00:00:00Z"), `, "actionDate": "2026-01-01T00:00:00Z"`, ``, 1), "samActionLogs[1].actionDate: required"},
		{"no entity", samLogJSON(2, "", "2026-01-01T00:00:00Z"), "samActionLogs[1].entityId: required"},
	} {
		file := `{"samActionLogs": [` + good + `, ` + c.bad + `]}`
		_, fileErr := readFileString(file)
		_, readErr := Read(strings.NewReader(file))
		if fileErr == nil || readErr == nil || fileErr.Error() != readErr.Error() || !strings.HasPrefix(readErr.Error(), c.want) {
			t.Errorf("%s: ReadFile says %v, Read %v; want %q", c.name, fileErr, readErr, c.want)
		}
	}
	upper := strings.ToUpper(l1)
	file := `{"samActionLogs": [` + samLogJSON(1, upper, "2026-01-01T00:00:00Z") + `, ` + samLogJSON(2, upper, "2026-01-01T00:00:00Z") + `]}`
	ds, err := Read(strings.NewReader(file))
	if err != nil || ds.SAMActionLogs[1].EntityID != l1 {
		t.Fatalf("Read: %v, %+v", err, ds)
	}
	f, err := readFileString(file)
	if err != nil {
		t.Fatal(err)
	}
	sr := f.samReaderAt(f.starts[0], 0)
	for range 2 {
		var r domain.SAMActionLog
		if ok, err := sr.next(&r); !ok || err != nil || r.EntityID != l1 {
			t.Fatalf("the second reading: %v, %v, %+v", ok, err, r)
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
		{"bad date", samLogJSON(at, l1, "yesterday"), `samActionLogs[12345].actionDate: not an RFC 3339 date-time (parsing time "yesterday"`},
		{"impossible date", samLogJSON(at, l1, "2026-02-30T00:00:00Z"), `samActionLogs[12345].actionDate: not an RFC 3339 date-time (parsing time "2026-02-30T00:00:00Z": day out of range) (line 12346, column 129)`},
		{"number out of range", strings.Replace(samLogJSON(at, l1, "2026-01-01T00:00:00Z"), `"samId": 12345`, `"samId": 1e400`, 1), "samActionLogs[12345].samId: expected a whole number from -9223372036854775808 to 9223372036854775807, got 1e400 (line 12346, column 162)"},
		{"bad entity", samLogJSON(at, "x", "2026-01-01T00:00:00Z"), `samActionLogs[12345].entityId: not a uuid: "x"`},
		{"wrong type", `{"id": "` + p1 + `", "samId": "1"}`, "samActionLogs[12345].samId: expected a number"},
		{"unknown field", `{"id": "` + p1 + `", "sam": 1}`, `samActionLogs[12345].sam: unknown field`},
		{"null", `null`, "samActionLogs[12345]: expected an object, got null"},
		{"escaped, fine but for the action", `{"id": "\u0030` + p1[1:] + `", "entityId": "` + l1 + `", "action": "\t", "actionDate": "2026-01-01T00:00:00Z"}`,
			"samActionLogs[12345].action: required"},
		{"broken", `{"id": "` + p1 + `",, }`, "samActionLogs[12345]: malformed JSON: invalid character ',' at start of value (line 12346, column 47)"},
		{"too large", `{"action": "` + strings.Repeat("a", 3*maxRecord) + `"}`, "samActionLogs[12345]: a record larger than 1 MiB (line 12346, column 1)"},
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
	if err != nil || f.logs != n || len(f.ds.SAMActionLogs) != 0 || len(f.ds.Partners) != 1 || f.Records() != n+1 {
		t.Fatalf("ReadFile: %v, %+v", err, f)
	}
}

// The file's structure around and inside the SAM log array is checked, the error naming the
// line and column, and the record where it is in one.
func TestReadFileStructure(t *testing.T) {
	log := samLogJSON(1, l1, "2026-01-01T00:00:00Z")
	for _, c := range []struct{ file, want string }{
		{``, "not a JSON object: the file is empty"},
		{`{"samActionLogs": [`, "samActionLogs[0]: malformed JSON: unexpected end of the file (line 1, column 20)"},
		{"{\"samActionLogs\": [\n" + log + ",\n" + log[:40], "samActionLogs[1].id: malformed JSON: unexpected end of the file (line 3, column 41)"},
		{`{"samActionLogs": [` + log + ` ` + samLogJSON(2, l1, "2026-01-01T00:00:00Z") + `]}`,
			`samActionLogs[1]: malformed JSON: invalid character '{' after array element (expecting ',' or ']') (line 1, column 184)`},
		{`{"samActionLogs": [] "partners": []}`, `malformed JSON: invalid character '"' after object value (expecting ',' or '}') (line 1, column 22)`},
		{`{"samActionLogs" []}`, `samActionLogs: malformed JSON: invalid character '[' after object name (expecting ':') (line 1, column 18)`},
		{`{samActionLogs: []}`, `malformed JSON: invalid character 's' at start of value (line 1, column 2)`},
		{`{"samActionLogs": {}}`, `samActionLogs: expected an array of objects (line 1, column 19)`},
		{`{"samActionLogs": []} x`, `unexpected data after the JSON object (line 1, column 23)`},
		{"{\"partners\": [\n  {\"id\": \"" + p1 + "\", \"name\": \"P\"},\n  {\"id\": \"" + p1 + "\",}\n]}",
			`partners[1]: malformed JSON: invalid character ',' at start of value (line 3, column 48)`},
		{`{"partners": [{"id": "` + p1 + `", "name": "P"}`, `partners[1]: malformed JSON: unexpected end of the file (line 1, column 74)`},
		{`{"partners": [{"id": "` + p1 + `", "name": "P"` + "\n", `partners[0]: malformed JSON: unexpected end of the file (line 2, column 1)`},
		{`{"partners": [{"id": "` + p1 + `", "name": tru}]}`, `partners[0].name: malformed JSON: invalid character '}' in literal true (expecting 'e') (line 1, column 73)`},
		// The column counts characters, not bytes.
		{`{"partners": [{"name": "é", "id": 1.}]}`, `partners[0].id: malformed JSON: invalid character '}' in number (expecting digit) (line 1, column 37)`},
	} {
		if _, err := readFileString(c.file); err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %q", c.file, err, c.want)
		}
	}
}

// A key given twice, or a name given twice within a record (in any letter case: encoding/json
// would take either for the field, the last one winning), is refused: the import would keep one
// of two values. So are strings that would not come back as written (invalid UTF-8, a lone
// surrogate, NUL), and values past the limits. Each error names the place, and the same problem
// inside a SAM log of the stream is named as well.
func TestReadFileRefusesWhatItCannotKeep(t *testing.T) {
	partner := func(fields string) string { return `{"partners": [{"id": "` + p1 + `", ` + fields + `}]}` }
	lead := func(fields string) string {
		return `{"leads": [{"id": "` + l1 + `", "partnerId": "` + p1 + `", "businessName": "B", ` + fields + `}]}`
	}
	samLog := func(fields string) string {
		return `{"samActionLogs": [` + samLogJSON(1, l1, "2026-01-01T00:00:00Z") + `, {"id": "` + p1 + `", "entityId": "` + l1 +
			`", "actionDate": "2026-01-01T00:00:00Z", ` + fields + `}]}`
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct{ name, file, want string }{
		{"key twice", `{"leads": [], "partners": [], "leads": []}`, "leads: duplicate key: the file may hold each key once (line 1, column 31)"},
		{"samActionLogs twice", `{"samActionLogs": [], "samActionLogs": []}`, "samActionLogs: duplicate key"},
		{"key twice, escaped", `{"leads": [], "le\u0061ds": []}`, "leads: duplicate key"},
		{"field twice", partner(`"name": "A", "name": "B"`), "partners[0].name: duplicate field: a name may appear once in an object, in any letter case (line 1, column 75)"},
		{"field twice in another case", partner(`"name": "A", "Name": "B"`), "partners[0].Name: duplicate field"},
		{"nested field twice", lead(`"serviceAcceptance": {"configured": true, "configured": false}`), "leads[0].serviceAcceptance.configured: duplicate field"},
		{"deletes key twice", `{"deletes": {"varsheets": [], "varsheets": []}}`, "deletes.varsheets: duplicate key"},
		{"settings field twice", `{"fileBuilds": [{"id": "` + p1 + `", "lineItemId": "` + p1 + `", "settings": {"tips": {}, "tips": {}}}]}`, "fileBuilds[0].settings.tips: duplicate field"},
		{"SAM log field twice", samLog(`"action": "a", "action": "b"`), "samActionLogs[1].action: duplicate field"},
		{"invalid UTF-8", partner("\"name\": \"caf\xe9\""), "partners[0].name: malformed JSON: invalid UTF-8 (line 1, column 74)"},
		{"invalid UTF-8 in a SAM log", samLog("\"action\": \"\xff\""), "samActionLogs[1].action: malformed JSON: invalid UTF-8"},
		{"invalid UTF-8 in a name", partner("\"n\xffme\": \"x\""), "partners[0]: malformed JSON: invalid UTF-8"},
		{"lone surrogate", partner(`"name": "\ud83d"`), "partners[0].name: malformed JSON: invalid surrogate pair `\\ud83d\"}]}` in string (line 1, column 71)"},
		{"lone low surrogate", partner(`"name": "\ude00x"`), "partners[0].name: malformed JSON: invalid surrogate pair `\\ude00x"},
		{"NUL", partner(`"name": "a\u0000"`), `partners[0].name: a NUL character (\u0000) in a string, which the database cannot keep`},
		{"long name", partner(`"name": "` + long(maxText+1) + `"`), "partners[0].name: longer than 255 characters (256)"},
		{"long business name", lead(`"midId": null`)[:0] + `{"leads": [{"businessName": "` + long(10<<20) + `"}]}`, "leads[0].businessName: longer than 255 characters (line 1, column 29)"},
		{"long name, multibyte", partner(`"name": "` + strings.Repeat("é", maxText+1) + `"`), "partners[0].name: longer than 255 characters (256)"},
		{"long action in a SAM log", samLog(`"action": "` + long(maxText+1) + `"`), "samActionLogs[1].action: longer than 255 characters"},
		{"long note", `{"merchantNotes": [{"body": "` + long(10_001) + `"}]}`, "merchantNotes[0].body: longer than 10000 characters"},
		{"long key", `{"apiKeys": [{"key": "` + long(1025) + `"}]}`, "apiKeys[0].key: longer than 1024 characters"},
		{"long setting", `{"fileBuilds": [{"settings": {"receipt": {"headerLines": ["` + long(256) + `"]}}}]}`, "fileBuilds[0].settings.receipt.headerLines[0]: longer than 255 characters"},
		{"long id", partner(`"name": "P", "x": "` + long(300) + `"`)[:0] + `{"partners": [{"id": "` + long(300) + `"}]}`, "partners[0].id: longer than 255 characters"},
		{"big record", `{"users": [{"permissions": [` + strings.Repeat(`"*",`, maxRecord/4) + `"*"]}]}`, "users[0]: a record larger than 1 MiB (line 1, column 12)"},
		{"big document", `{"merchantDocuments": [{"contentBase64": "` + long((maxDocument+2)/3*4+4) + `"}]}`, "merchantDocuments[0].contentBase64: longer than 13981016 characters"},
		{"document of 10 MiB and 2 bytes", `{"merchantDocuments": [{"id": "` + p1 + `", "merchantId": "` + p1 + `", "fileName": "f", "contentType": "a/b", "contentBase64": "` +
			base64.StdEncoding.EncodeToString(make([]byte, maxDocument+2)) + `"}]}`,
			"merchantDocuments[0].contentBase64: a document larger than 10 MiB (10485762 bytes once decoded) (line 1, column 181)"},
		{"deep", `{"fileBuilds": [{"settings": ` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}]}`, "fileBuilds[0].settings[0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested more than 16 deep"},
	} {
		_, err := readFileString(c.file)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want prefix %q", c.name, err, c.want)
		}
		_, readErr := Read(strings.NewReader(c.file))
		if err != nil && (readErr == nil || err.Error() != readErr.Error()) {
			t.Errorf("%s: ReadFile says %q, Read %v", c.name, err, readErr)
		}
	}
	// At the limits, all is well: a document of maxDocument bytes, a name of maxText characters.
	doc := base64.StdEncoding.EncodeToString(make([]byte, maxDocument))
	f, err := readFileString(`{"merchantDocuments": [{"id": "` + p1 + `", "merchantId": "` + p1 + `", "fileName": "` + strings.Repeat("é", maxText) +
		`", "contentType": "a/b", "contentBase64": "` + doc + `"}]}`)
	if err != nil || len(f.ds.MerchantDocuments[0].ContentBase64) != maxDocument {
		t.Fatalf("a document at the limits: %v", err)
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
	if diff := cmp.Diff(ds, f.ds); diff != "" || f.logs != 2 || f.Records() != ds.Records()+2 {
		t.Fatalf("ReadFile and Read differ (-Read +ReadFile): %s", diff)
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
		file, err := ReadFile(bytes.NewReader(b), bytes.NewReader(b))
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
		if diff := cmp.Diff(ds, file.ds); diff != "" || file.logs != logs {
			t.Fatalf("datasets differ (-Read +ReadFile), %d logs against %d:\n%s", file.logs, logs, diff)
		}
	})
}

// BenchmarkReadFile reads a file as the import's first pass does: 200,000 SAM logs, written as
// export writes them, and 20,000 partners, which checkJSON reads before encoding/json does.
func BenchmarkReadFile(b *testing.B) {
	var file bytes.Buffer
	file.WriteString("{\n  \"partners\": [\n")
	for i := range 20_000 {
		if i > 0 {
			file.WriteString(",\n")
		}
		fmt.Fprintf(&file, `    {"id": "00000000-0000-4000-8000-%012d", "name": "Partner número %d"}`, i, i)
	}
	file.WriteString("\n  ],\n  \"samActionLogs\": [\n")
	for i := range 200_000 {
		if i > 0 {
			file.WriteString(",\n")
		}
		file.WriteString("    {\n      \"id\": \"" + fmt.Sprintf("00000000-0000-4000-9000-%012d", i) + "\",\n      \"entityId\": \"" + l1 +
			"\",\n      \"action\": \"add_equipment_purchase_fail\",\n      \"actionDate\": \"2026-01-01T00:00:00Z\",\n      \"samId\": " + fmt.Sprint(i) + "\n    }")
	}
	file.WriteString("\n  ]\n}\n")
	b.SetBytes(int64(file.Len()))
	for b.Loop() {
		f, err := ReadFile(bytes.NewReader(file.Bytes()), bytes.NewReader(file.Bytes()))
		if err != nil || f.logs != 200_000 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "logs/s")
}
