package api_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"backoffice/internal/api"
)

// GET /docs, in a real Chromium, renders every operation of the document the service serves,
// with nothing fetched from anywhere but the service and no error on the page.
func TestDocsPageInBrowser(t *testing.T) {
	b := startBrowser(t)
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, op.OperationID)
		}
	}
	slices.Sort(ids)
	svc := httptest.NewServer(api.New(api.Deps{Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(svc.Close)

	p := b.open(svc.URL + "/docs")
	// Redoc renders after the page's load event: wait until a section of every operation shows
	// (Redoc names them operation/ID, under tag/NAME/ when the operation has tags).
	want, _ := json.Marshal(ids)
	var shown []string
	p.eval(fmt.Sprintf(`new Promise(resolve => {
  const ids = %s;
  const shown = () => ids.filter(id => document.querySelector('[data-section-id="operation/' + id + '"], [data-section-id$="/operation/' + id + '"]'));
  const check = () => { if (shown().length === ids.length) { resolve(shown()); } };
  new MutationObserver(check).observe(document, {childList: true, subtree: true});
  check();
})`, want), &shown)
	if !slices.Equal(shown, ids) {
		t.Errorf("operations shown %v, want %v", shown, ids)
	}
	var title string
	p.eval(`document.title`, &title)
	if title != "backoffice API reference" {
		t.Errorf("title %q", title)
	}
	// Redoc's side menu shows its maker's logo from the maker's site; the page's policy blocks
	// it (Redoc then leaves the image out), so that is the one error expected.
	logo := regexp.MustCompile(`^Loading the image 'https://cdn\.redoc\.ly/redoc/logo-mini\.svg' violates the following Content Security Policy directive`)
	var problems []string
	for _, pr := range p.problems() {
		if !logo.MatchString(pr) {
			problems = append(problems, pr)
		}
	}
	if len(problems) > 0 {
		t.Errorf("the page reported errors:\n%q", problems)
	}
}

// The page and its script are served from the binary, with a policy that keeps the page to the
// service's own origin.
func TestDocsPageServed(t *testing.T) {
	forEachEngine(t, func(t *testing.T, h *harness) {
		for _, c := range []struct{ path, contentType, starts string }{
			{"/docs", "text/html; charset=utf-8", "<!DOCTYPE html>"},
			{"/docs/redoc.standalone.js", "text/javascript; charset=utf-8", "/*! For license information please see redoc.standalone.js.LICENSE.txt */"},
		} {
			r := h.do(http.MethodGet, c.path, "")
			if r.Status != http.StatusOK || r.Header.Get("Content-Type") != c.contentType || !strings.HasPrefix(string(r.Body), c.starts) {
				t.Errorf("GET %s: %d %q %.80q", c.path, r.Status, r.Header.Get("Content-Type"), r.Body)
			}
			if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
				t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
			}
		}
	})
}
