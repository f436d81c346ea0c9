package ops

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector reports this process's database pool: connections in use
// against the cap, and how often a caller had to wait for one (the alert
// on saturation watches both).
type PoolCollector struct {
	pool                   *pgxpool.Pool
	acquired, max, waits   *prometheus.Desc
	acquireSeconds, totals *prometheus.Desc
}

// NewPoolCollector returns a collector over pool.
func NewPoolCollector(pool *pgxpool.Pool) *PoolCollector {
	return &PoolCollector{pool: pool,
		acquired:       prometheus.NewDesc("boxoffice_db_pool_acquired_conns", "Database connections in use by this process.", nil, nil),
		max:            prometheus.NewDesc("boxoffice_db_pool_max_conns", "The cap on this process's database connections.", nil, nil),
		totals:         prometheus.NewDesc("boxoffice_db_pool_acquires_total", "Connections acquired from this process's pool.", nil, nil),
		waits:          prometheus.NewDesc("boxoffice_db_pool_acquire_waits_total", "Acquires that had to wait for a connection.", nil, nil),
		acquireSeconds: prometheus.NewDesc("boxoffice_db_pool_acquire_wait_seconds_total", "Time spent waiting for connections.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.max, c.totals, c.waits, c.acquireSeconds} {
		ch <- d
	}
}

// Collect reads the pool's statistics (no query).
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(c.acquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(c.totals, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.acquireSeconds, prometheus.CounterValue, s.AcquireDuration().Seconds())
}
