package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/push"
)

// FuzzHandler sends arbitrary paths, queries and Authorization headers through the real router,
// middleware and store: no answer is a 5xx, and every error answer is the error body.
func FuzzHandler(f *testing.F) {
	st, ring := fixtureStore(f, "sqlite")
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := api.New(api.Deps{Store: st, Ring: ring, Pusher: push.New(push.Config{Store: st, Logger: log}), Logger: log,
		Now: func() time.Time { return fixtureNow }})

	for _, op := range operations() {
		f.Add(uint8(0), op.path, "", "Api-Key "+staffKey)
	}
	for _, s := range []struct{ path, query, auth string }{
		{samPath(leadA.String()), "page=2&size=5", "Api-Key " + partnerAKey},
		{samPath(leadA.String()), "page=99999999999999999999&size=100", "Api-Key " + staffKey},
		{samPath(leadA.String()), "page=%zz", "bearer " + staffSession},
		{samPath("not-a-uuid"), "size=-1", "Api-Key " + noPermKey},
		{decryptPath(leadA, principalA, "ssn\x00"), "", "Api-Key " + staffKey},
		{"/v1/crm/leads//service-acceptance", "", "Api-Key " + staffKey},
		{"/../../etc/passwd", "", ""},
		{"/healthz", "", ""},
		{"/readyz", "x=1", "Basic x"},
		{"/openapi.yaml", "", ""},
		{"/v1/crm/leads/" + strings.Repeat("a", 5000) + "/service-acceptance", "", "Api-Key " + strings.Repeat("k", 5000)},
	} {
		for m := range uint8(4) {
			f.Add(m, s.path, s.query, s.auth)
		}
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, "BREW"}
	f.Fuzz(func(t *testing.T, m uint8, path, query, authz string) {
		method := methods[int(m)%len(methods)]
		if method == http.MethodPost {
			return // a push calls the (absent) gateway: covered by the push tests
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u := &url.URL{Path: path, RawQuery: query}
		req := httptest.NewRequest(method, "/", nil)
		req.URL, req.RequestURI = u, u.RequestURI()
		if authz != "" {
			req.Header["Authorization"] = []string{authz}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		if res.Status >= 500 {
			t.Fatalf("%s %q %q -> %d %s", method, path, query, res.Status, res.Body)
		}
		if res.Status >= 400 {
			checkErrorBody(t, req, res)
		}
	})
}
