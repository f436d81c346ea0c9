package ops

import (
	"github.com/prometheus/client_golang/prometheus"

	"boxoffice/internal/db"
)

// FenceCollector reports a process's database fence (db.Fence): how many
// hosts of DATABASE_URL accept writes (more than one pauses purchases), the
// highest timeline seen on a writer, and the queries refused.
type FenceCollector struct {
	fence                       *db.Fence
	writers, timeline, refusals *prometheus.Desc
}

// NewFenceCollector returns a collector over fence.
func NewFenceCollector(fence *db.Fence) *FenceCollector {
	return &FenceCollector{fence: fence,
		writers: prometheus.NewDesc("boxoffice_db_writers",
			"Hosts of DATABASE_URL that accepted writes at the last probe (more than 1: purchases paused).", nil, nil),
		timeline: prometheus.NewDesc("boxoffice_db_timeline",
			"The highest PostgreSQL timeline this process has seen on a writer.", nil, nil),
		refusals: prometheus.NewDesc("boxoffice_db_fence_refusals_total",
			"Connections and transactions refused because the database writer was in doubt.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *FenceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.writers
	ch <- c.timeline
	ch <- c.refusals
}

// Collect reads the fence's state (no query).
func (c *FenceCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.writers, prometheus.GaugeValue, float64(c.fence.Writers()))
	ch <- prometheus.MustNewConstMetric(c.timeline, prometheus.GaugeValue, float64(c.fence.Timeline()))
	ch <- prometheus.MustNewConstMetric(c.refusals, prometheus.CounterValue, float64(c.fence.Refusals()))
}
