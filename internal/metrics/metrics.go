// Package metrics measures the service for Prometheus: requests by route pattern, method and
// status with their latency, gateway pushes and decrypts by outcome, the database pool, the Go
// runtime, the process and the build. Everything lives in one registry of its own (never the
// global one), and every label has a bounded set of values: a route pattern, never a raw path.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"backoffice/internal/buildinfo"
)

// Metrics holds the service's collectors. It implements api.Observer and push.Observer.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	pushes       *prometheus.CounterVec
	pushDuration *prometheus.HistogramVec
	decrypts     *prometheus.CounterVec
	// witnessAnswers, checkpointSize and finalSize follow the audit log's checkpoints and their
	// witnesses.
	witnessAnswers *prometheus.CounterVec
	checkpointSize prometheus.Gauge
	finalSize      prometheus.Gauge
	// auditGroups and auditWrites follow the audit writer's groups: how many events each
	// commits together, and how long writing one takes.
	auditGroups *prometheus.HistogramVec
	auditWrites *prometheus.HistogramVec
	// routes keeps, by request kind, the series ObserveRequest adds to: resolving them by their
	// labels on every request (hashing the label values, a look-up under a lock) cost more than
	// the observation.
	routes sync.Map // requestKind -> *requestSeries
}

// requestKind is the labels of a request's series; their values are bounded (see ObserveRequest).
type requestKind struct {
	method, route string
	status        int
}

type requestSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// Request latencies are mostly well under a millisecond; pushes take up to the gateway budget.
var (
	requestBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	pushBuckets    = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// An audit group holds 1 to 128 events; its write is a commit and its sync, up to the busy
	// timeout when the database's write lock is held elsewhere.
	auditGroupBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128}
	auditWriteBuckets = []float64{.0001, .00025, .0005, .001, .002, .004, .008, .016, .032, .064, .128, .256, .5, 1, 2.5, 5, 10}
)

// New returns the metrics of a service, with pool's (the database pool's statistics, as the
// store's PoolCollector gives them; nil: none).
func New(pool prometheus.Collector) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backoffice_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "backoffice_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method and route pattern.",
			Buckets: requestBuckets,
		}, []string{"method", "route"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backoffice_gateway_pushes_total",
			Help: "Device-parameter pushes that reached the gateway stage, by outcome (succeeded, rejected, unavailable, not_configured, error).",
		}, []string{"outcome"}),
		pushDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "backoffice_gateway_push_duration_seconds",
			Help:    "Time a push spent with the gateway, retries included, by outcome.",
			Buckets: pushBuckets,
		}, []string{"outcome"}),
		decrypts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backoffice_decrypts_total",
			Help: "Authenticated decrypt attempts, by audited outcome (granted, denied, not_found, invalid) or audit_failed.",
		}, []string{"outcome"}),
		witnessAnswers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "backoffice_audit_witness_answers_total",
			Help: "Witnesses' answers to the audit log's checkpoints, by witness (its name in the policy) and outcome (cosigned, refused, behind, bad_cosignature, conflict, unavailable).",
		}, []string{"witness", "outcome"}),
		checkpointSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "backoffice_audit_checkpoint_size",
			Help: "Tree size of the newest audit checkpoint this process signed and sent to the witnesses.",
		}),
		finalSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "backoffice_audit_final_checkpoint_size",
			Help: "Tree size of the newest audit checkpoint a quorum of the witness policy cosigned: behind backoffice_audit_checkpoint_size while witnesses lag.",
		}),
		auditGroups: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "backoffice_audit_group_events",
			Help:    "Audit events the audit writer wrote together in one transaction, by outcome (committed, failed).",
			Buckets: auditGroupBuckets,
		}, []string{"outcome"}),
		auditWrites: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "backoffice_audit_group_write_seconds",
			Help:    "Time the audit writer took to write one group of audit events, from taking it up to its commit (or failure), waits for the database's write lock and retries included, by outcome (committed, failed).",
			Buckets: auditWriteBuckets,
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.pushes, m.pushDuration, m.decrypts, m.witnessAnswers, m.checkpointSize, m.finalSize,
		m.auditGroups, m.auditWrites,
		buildInfo(buildinfo.Read()),
		collectors.NewBuildInfoCollector(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if pool != nil {
		m.reg.MustRegister(pool)
	}
	return m
}

// buildInfo is the backoffice_build_info gauge: always 1, its labels say which build runs (the
// Go collector's go_build_info has the module version alone, "(devel)" for most builds).
func buildInfo(b buildinfo.Info) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "backoffice_build_info",
		Help: "Which build runs: module version, VCS revision and commit time (unknown when the build did not record them), uncommitted changes, Go version. Always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "vcs_time": b.Time,
			"modified": strconv.FormatBool(b.Modified), "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveRequest counts one answered request. The caller passes a route pattern and a known
// method, never raw input.
func (m *Metrics) ObserveRequest(method, route string, status int, elapsed time.Duration) {
	k := requestKind{method, route, status}
	v, ok := m.routes.Load(k)
	if !ok {
		v, _ = m.routes.LoadOrStore(k, &requestSeries{
			count:   m.requests.WithLabelValues(method, route, statusText(status)),
			latency: m.latency.WithLabelValues(method, route),
		})
	}
	s := v.(*requestSeries)
	s.count.Inc()
	s.latency.Observe(elapsed.Seconds())
}

// ObserveDecrypt counts one decrypt attempt.
func (m *Metrics) ObserveDecrypt(outcome string) { m.decrypts.WithLabelValues(outcome).Inc() }

// ObserveWitnessAnswer counts one witness's answer to a checkpoint; witness is a name from the
// policy, outcome one of a fixed few.
func (m *Metrics) ObserveWitnessAnswer(witness, outcome string) {
	m.witnessAnswers.WithLabelValues(witness, outcome).Inc()
}

// ObserveAuditCheckpoint records the newest checkpoint's size and the newest final one's.
func (m *Metrics) ObserveAuditCheckpoint(size, final int64) {
	m.checkpointSize.Set(float64(size))
	m.finalSize.Set(float64(final))
}

// ObserveAuditGroup records one group the audit writer wrote: its events, how long the write
// took, and whether it committed.
func (m *Metrics) ObserveAuditGroup(events int, took time.Duration, committed bool) {
	outcome := "committed"
	if !committed {
		outcome = "failed"
	}
	m.auditGroups.WithLabelValues(outcome).Observe(float64(events))
	m.auditWrites.WithLabelValues(outcome).Observe(took.Seconds())
}

// ObservePush counts one push that reached the gateway stage, and its duration.
func (m *Metrics) ObservePush(outcome string, elapsed time.Duration) {
	m.pushes.WithLabelValues(outcome).Inc()
	m.pushDuration.WithLabelValues(outcome).Observe(elapsed.Seconds())
}

// statusText avoids formatting the common statuses on every request.
func statusText(status int) string {
	switch status {
	case 200:
		return "200"
	case 204:
		return "204"
	case 400:
		return "400"
	case 401:
		return "401"
	case 403:
		return "403"
	case 404:
		return "404"
	case 429:
		return "429"
	}
	return strconv.Itoa(status)
}
