package app

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"backoffice/internal/testdb"
)

// readLoad runs readers against a replica's read operations (a SAM log page, a service
// acceptance) until stop is called (or the test ends), counting the answers and failing the test
// on any 5xx.
type readLoad struct {
	answered atomic.Int64
	progress chan struct{} // one send per answer, taken by waitAnswers
	quit     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func startReads(t *testing.T, base string, readers int) *readLoad {
	t.Helper()
	l := &readLoad{progress: make(chan struct{}), quit: make(chan struct{})}
	t.Cleanup(l.stop)
	paths := []string{"/v1/crm/sam-action-logs/" + string(demoLead), "/v1/crm/leads/" + string(demoLead) + "/service-acceptance"}
	for i := range readers {
		l.wg.Go(func() {
			for n := 0; ; n++ {
				path := paths[(i+n)%len(paths)]
				if a := call(t, http.MethodGet, base+path); a.status >= 500 || a.status == 0 {
					t.Errorf("GET %s under failover: %+v", path, a)
				}
				l.answered.Add(1)
				select {
				case l.progress <- struct{}{}:
				case <-l.quit:
					return
				}
			}
		})
	}
	return l
}

// waitAnswers returns once the readers have had n more answers.
func (l *readLoad) waitAnswers(n int) {
	for range n {
		<-l.progress
	}
}

func (l *readLoad) stop() {
	l.stopOnce.Do(func() { close(l.quit) })
	l.wg.Wait()
}

// TestReadsSurviveTerminatedBackends ends every server process of the service's database, again
// and again, while readers keep asking: each read that meets a connection the server lost is run
// again on a fresh one, so no reader sees a 5xx. Directly and through PgBouncer (whose server
// connections are the ones ended).
func TestReadsSurviveTerminatedBackends(t *testing.T) {
	for _, engine := range testdb.PostgresEngines() {
		t.Run(engine, func(t *testing.T) {
			dbURL := testdb.URL(t, engine)
			vars := replicaVars(dbURL, "")
			r := startReplicas(t, 1, vars)[0]
			importDemo(t, vars)
			load := startReads(t, r.base, 8)
			ended := 0
			for range 5 {
				load.waitAnswers(200)
				ended += testdb.TerminateBackends(t, dbURL)
			}
			load.waitAnswers(200)
			load.stop()
			if t.Failed() {
				t.Logf("the replica's log:\n%s", r.logs)
			}
			if ended == 0 {
				t.Fatal("no server process was ended: the test tested nothing")
			}
			t.Logf("%d reads, %d server processes ended", load.answered.Load(), ended)
		})
	}
}

// TestReadsSurviveAPgBouncerRestart restarts the pooler between the service and PostgreSQL, again
// and again, while readers keep asking: the old pooler closes every connection the service had to
// it, and no reader sees a 5xx.
func TestReadsSurviveAPgBouncerRestart(t *testing.T) {
	dbURL, pooler := testdb.StartPgBouncer(t, testdb.URL(t, "postgres"))
	vars := replicaVars(dbURL, "")
	r := startReplicas(t, 1, vars)[0]
	importDemo(t, vars)
	load := startReads(t, r.base, 8)
	for range 3 {
		load.waitAnswers(200)
		pooler.Restart()
	}
	load.waitAnswers(200)
	load.stop()
	if t.Failed() {
		t.Logf("the replica's log:\n%s", r.logs)
	}
	t.Logf("%d reads, 3 restarts", load.answered.Load())
}
