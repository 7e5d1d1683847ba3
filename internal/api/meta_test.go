package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// recorderTB catches the errors validate reports, to prove it is not a no-op.
type recorderTB struct {
	testing.TB
	errors []string
}

func (r *recorderTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorderTB) Helper() {}

func TestValidatorCatchesDrift(t *testing.T) {
	acceptance := `{"midId":null,"configured":false,"cardPlans":[],"ebtFcsNumber":null,"amexProgram":null,"amexEsaNumber":null,"ebtBenefitMode":null}`
	cases := []struct {
		name, body string
		status     int
		ok         bool
	}{
		{"valid", acceptance, 200, true},
		{"undocumented field", strings.Replace(acceptance, `{`, `{"extra":1,`, 1), 200, false},
		{"missing field", strings.Replace(acceptance, `"configured":false,`, ``, 1), 200, false},
		{"bad enum", strings.Replace(acceptance, `"amexProgram":null`, `"amexProgram":"gold"`, 1), 200, false},
		{"undocumented status", acceptance, 418, false},
		{"error body without code", `{"status":404,"detail":"x"}`, 404, false},
		{"400 without the parameter", `{"status":400,"code":"invalid_parameter","detail":"x"}`, 400, false},
		{"parameter on another status", `{"status":404,"code":"not_found","detail":"x","parameter":"leadId"}`, 404, false},
		{"undeclared header", acceptance, 200, false},
		{"no request id", acceptance, 200, false},
	}
	for _, c := range cases {
		rec := &recorderTB{TB: t}
		req := httptest.NewRequest(http.MethodGet, "/v1/crm/leads/"+leadA.String()+"/service-acceptance", nil)
		header := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"0123456789abcdef"}}
		switch c.name {
		case "undeclared header":
			header.Set("X-Debug", "1")
		case "no request id":
			header.Del("X-Request-Id")
		}
		validate(rec, req, response{Status: c.status, Header: header, Body: []byte(c.body)})
		if ok := len(rec.errors) == 0; ok != c.ok {
			t.Errorf("%s: valid=%v, want %v (%v)", c.name, ok, c.ok, rec.errors)
		}
	}
}

// One structured line per request, with what an operator needs and no secret.
func TestAccessLog(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		h.get(decryptPath(leadA, principalA, "ssn"), partnerAKey)
		var line map[string]any
		sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "request" {
				line = m
			}
		}
		if line == nil {
			t.Fatalf("no request line in %s", h.logs.String())
		}
		if line["method"] != "GET" || line["route"] != "GET /v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field}" ||
			line["status"] != float64(200) || line["request_id"] == "" || line["duration_ms"] == nil {
			t.Fatalf("request line %v", line)
		}
		for _, secret := range []string{partnerAKey, principalSSN, leadA.String()} {
			if strings.Contains(h.logs.String(), secret) {
				t.Errorf("log holds %q", secret)
			}
		}
	})
}
