package metrics

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector exposes the database pool's statistics under the names of client_golang's
// DBStatsCollector (go_sql_*, labelled db_name="backoffice"), read from a function rather than a
// *sql.DB: the store hands out its statistics, never its pool.
type poolCollector struct {
	stats func() sql.DBStats
	descs []poolMetric
}

// poolMetric is one statistic of the pool: its name, help and kind, and its value.
type poolMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(sql.DBStats) float64
}

func newPoolCollector(stats func() sql.DBStats) *poolCollector {
	labels := prometheus.Labels{"db_name": "backoffice"}
	metric := func(name, help string, kind prometheus.ValueType, value func(sql.DBStats) float64) poolMetric {
		return poolMetric{desc: prometheus.NewDesc("go_sql_"+name, help, nil, labels), kind: kind, value: value}
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return &poolCollector{stats: stats, descs: []poolMetric{
		metric("max_open_connections", "Maximum number of open connections to the database.", gauge,
			func(s sql.DBStats) float64 { return float64(s.MaxOpenConnections) }),
		metric("open_connections", "The number of established connections both in use and idle.", gauge,
			func(s sql.DBStats) float64 { return float64(s.OpenConnections) }),
		metric("in_use_connections", "The number of connections currently in use.", gauge,
			func(s sql.DBStats) float64 { return float64(s.InUse) }),
		metric("idle_connections", "The number of idle connections.", gauge,
			func(s sql.DBStats) float64 { return float64(s.Idle) }),
		metric("wait_count_total", "The total number of connections waited for.", counter,
			func(s sql.DBStats) float64 { return float64(s.WaitCount) }),
		metric("wait_duration_seconds_total", "The total time blocked waiting for a new connection.", counter,
			func(s sql.DBStats) float64 { return s.WaitDuration.Seconds() }),
		metric("max_idle_closed_total", "The total number of connections closed due to SetMaxIdleConns.", counter,
			func(s sql.DBStats) float64 { return float64(s.MaxIdleClosed) }),
		metric("max_idle_time_closed_total", "The total number of connections closed due to SetConnMaxIdleTime.", counter,
			func(s sql.DBStats) float64 { return float64(s.MaxIdleTimeClosed) }),
		metric("max_lifetime_closed_total", "The total number of connections closed due to SetConnMaxLifetime.", counter,
			func(s sql.DBStats) float64 { return float64(s.MaxLifetimeClosed) }),
	}}
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.descs {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector: one reading of the statistics for every metric.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.descs {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s))
	}
}
