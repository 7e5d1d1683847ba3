package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"backoffice/internal/api"
	"backoffice/internal/cputime"
	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/jsonlog"
	"backoffice/internal/metrics"
	"backoffice/internal/push"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
	"backoffice/internal/testdb"
)

// BenchmarkOperations serves each read operation through the real router, middleware, metrics
// and a SQLite store (the fixture), without the network: the service's own cost per request.
func BenchmarkOperations(b *testing.B) {
	st, ring := fixtureStore(b, "sqlite")
	// With metrics, as serve runs by default: the access line and the metrics are per-request work.
	h := benchHandler(st, st, ring, metrics.New(nil))
	for _, c := range []struct{ name, path string }{
		{"acceptance", "/v1/crm/leads/" + leadA.String() + "/service-acceptance"},
		{"decrypt", decryptPath(leadA, principalA, "ssn")},
		{"sam_page_1", samPath(leadA.String()) + "?page=1&size=20"},
		{"sam_page_12", samPath(leadA.String()) + "?page=12&size=20"},
		{"healthz", "/healthz"},
	} {
		b.Run(c.name, func(b *testing.B) { serveLoop(b, h, c.path) })
	}
}

// BenchmarkRequestPath is BenchmarkOperations with a store that answers from values read once
// from the real one: what is left is the request path outside the store (middleware, routing,
// authentication's hashing and rate limit, the handler, the answer's encoding, the access line
// and the metrics), the part the store's speed does not change.
func BenchmarkRequestPath(b *testing.B) {
	st, ring := fixtureStore(b, "sqlite")
	h := benchHandler(freeze(b, st), st, ring, metrics.New(nil))
	for _, c := range []struct{ name, path string }{
		{"acceptance", "/v1/crm/leads/" + leadA.String() + "/service-acceptance"},
		{"decrypt", decryptPath(leadA, principalA, "ssn")},
		{"sam_page_1", samPath(leadA.String()) + "?page=1&size=20"},
	} {
		b.Run(c.name, func(b *testing.B) { serveLoop(b, h, c.path) })
	}
}

// fixtureStore is a store on engine holding the fixture, its clock at fixtureNow, and its key ring.
func fixtureStore(tb testing.TB, engine string) (*store.Store, *secrets.Ring) {
	st := testdb.Open(tb, engine)
	ring := testdb.Ring(tb)
	if _, err := dataset.Import(context.Background(), st, fixture(), ring); err != nil {
		tb.Fatal(err)
	}
	return st, ring
}

// benchHandler is the service over st, with the rate limits out of the way and the access line
// written to nowhere; pushes record in pushes. A nil m observes nothing.
func benchHandler(st api.Store, pushes *store.Store, ring *secrets.Ring, m api.Observer) http.Handler {
	log := slog.New(jsonlog.New(io.Discard, slog.LevelInfo))
	return api.New(api.Deps{Store: st, Ring: ring, Pusher: push.New(push.Config{Store: pushes, Logger: log}), Logger: log,
		Metrics: m, Limits: api.Limits{Rate: 1e9, Burst: 1e9, FailureRate: 1, FailureBurst: 10}})
}

// serveLoop answers GET path as the staff key until the benchmark has its measure.
func serveLoop(b *testing.B, h http.Handler, path string) {
	// A context that can end, as net/http gives every request one: what the store does with it
	// (database/sql and the driver watch it) is part of the cost.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Api-Key "+staffKey)
	cpu := cputime.Process()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	if cpu >= 0 {
		b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
	}
}

// frozenStore answers the benchmark's reads with what the real store answered once, and records
// no audit event.
type frozenStore struct {
	api.Store
	cred  domain.Credential
	sa    domain.ServiceAcceptance
	logs  []domain.SAMActionLog
	total int64
	ssn   domain.SealedSSN
}

func freeze(b *testing.B, st api.Store) *frozenStore {
	ctx := context.Background()
	f := &frozenStore{Store: st}
	var err error
	if f.cred, err = st.Credential(ctx, domain.CredentialAPIKey, secrets.HashCredential(domain.CredentialAPIKey, staffKey)); err != nil {
		b.Fatal(err)
	}
	if f.sa, err = st.ServiceAcceptance(ctx, domain.Scope{}, leadA); err != nil {
		b.Fatal(err)
	}
	if f.logs, f.total, _, err = st.ListVisibleSAMActionLogs(ctx, domain.Scope{}, leadA, 1, 20); err != nil {
		b.Fatal(err)
	}
	if f.ssn, err = st.PrincipalSSN(ctx, domain.Scope{}, leadA, principalA); err != nil {
		b.Fatal(err)
	}
	return f
}

func (f *frozenStore) Credential(context.Context, string, []byte) (domain.Credential, error) {
	return f.cred, nil
}

func (f *frozenStore) NoteAPIKeyUse(domain.ID, time.Time, time.Duration) {}

func (f *frozenStore) ServiceAcceptance(context.Context, domain.Scope, domain.ID) (domain.ServiceAcceptance, error) {
	return f.sa, nil
}

func (f *frozenStore) ListVisibleSAMActionLogs(context.Context, domain.Scope, domain.ID, int64, int64) ([]domain.SAMActionLog, int64, bool, error) {
	return f.logs, f.total, true, nil
}

func (f *frozenStore) PrincipalSSN(context.Context, domain.Scope, domain.ID, domain.ID) (domain.SealedSSN, error) {
	return f.ssn, nil
}

func (f *frozenStore) RecordAudit(context.Context, domain.AuditEvent) error { return nil }

// BenchmarkDecryptParallel decrypts from many goroutines at once, as under load: their audit
// events share group commits, so this is the decrypt's cost per request where the audit trail's
// per-commit costs (the chain's head, the WAL pages of each index) are spread over a group.
//
//	go test ./internal/api -run '^$' -bench DecryptParallel -count 5
func BenchmarkDecryptParallel(b *testing.B) {
	st, ring := fixtureStore(b, "sqlite")
	h := benchHandler(st, st, ring, nil)
	serveParallel(b, h, decryptPath(leadA, principalA, "ssn"))
}

// serveParallel answers GET path as the staff key from 16 goroutines per core at once.
func serveParallel(b *testing.B, h http.Handler, path string) {
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Api-Key "+staffKey)
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
	})
}
