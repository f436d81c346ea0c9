package ops

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exposes the platform report as Prometheus gauges. Scrapes within
// cacheFor of each other share one report, so a busy scraper cannot load the
// database. The figures come from the database, so in a fleet only one
// process should report them: Leader, when set, says whether this process is
// the one (the River leader); the others send nothing.
type Collector struct {
	reporter *Reporter
	logger   *slog.Logger
	// Leader reports whether this process reports the database's figures;
	// nil means always.
	Leader func(context.Context) bool

	mu     sync.Mutex
	last   *Report
	lastAt time.Time
	descs  map[string]*prometheus.Desc
}

const cacheFor = 5 * time.Second

// NewCollector returns a collector over reporter.
func NewCollector(reporter *Reporter, logger *slog.Logger) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &Collector{reporter: reporter, logger: logger, descs: map[string]*prometheus.Desc{
		"river_jobs":          d("boxoffice_river_jobs", "River jobs by queue and state.", "queue", "state"),
		"river_oldest":        d("boxoffice_river_oldest_available_age_seconds", "Age of the oldest available River job.", "queue"),
		"sqs_messages":        d("boxoffice_sqs_messages", "Approximate SQS messages by queue (main, dlq) and state.", "queue", "state"),
		"sqs_oldest":          d("boxoffice_sqs_oldest_message_age_seconds", "Age of the oldest message by queue (main, dlq).", "queue"),
		"requests":            d("boxoffice_requests", "Reservation requests by status.", "status"),
		"oldest_queued":       d("boxoffice_requests_oldest_queued_age_seconds", "Age of the oldest QUEUED request."),
		"dead":                d("boxoffice_requests_dead_lettered", "QUEUED requests whose message is in the dead-letter queue."),
		"room_waiting":        d("boxoffice_waiting_room_depth", "Shoppers waiting (not yet admitted) by product.", "product"),
		"payments_unresolved": d("boxoffice_payments_unresolved", "Payment attempts pending or unknown."),
		"payments_oldest":     d("boxoffice_payments_oldest_unresolved_age_seconds", "Age of the oldest unresolved payment attempt."),
		"expiry_backlog":      d("boxoffice_holds_expiry_backlog_seconds", "How long the longest-expired ACTIVE hold is past its expiry."),
		"outbox_lag":          d("boxoffice_outbox_lag_seconds", "Age of the oldest unpublished outbox event."),
		"checkout_paused":     d("boxoffice_checkout_paused", "1 while new checkouts are refused (paused by an operator or after unknown payment outcomes)."),
	}}
}

// Describe sends the descriptors.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the gauges of a fresh or cached report. A fault here must
// never fail the scrape: the process's own counters (invariant violations
// among them) travel in the same response. So a bad gauge is skipped and
// logged, and a panic is recovered.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	defer func() {
		if r := recover(); r != nil {
			c.logger.Error("queue figures collector panicked; scrape continues without them", "panic", r)
		}
	}()
	rep := c.report()
	if rep == nil {
		return
	}
	g := func(name string, v float64, labels ...string) {
		desc, ok := c.descs[name]
		if !ok {
			c.logger.Error("no descriptor for gauge", "gauge", name)
			return
		}
		m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, labels...)
		if err != nil {
			c.logger.Error("bad gauge", "gauge", name, "error", err)
			return
		}
		ch <- m
	}
	for _, q := range rep.River {
		g("river_jobs", float64(q.Available), q.Name, "available")
		g("river_jobs", float64(q.Running), q.Name, "running")
		g("river_jobs", float64(q.Retryable), q.Name, "retryable")
		g("river_jobs", float64(q.Scheduled), q.Name, "scheduled")
		g("river_jobs", float64(q.Discarded), q.Name, "discarded")
		g("river_oldest", q.OldestAvailableAgeSeconds, q.Name)
	}
	if rep.SQS != nil {
		for name, q := range map[string]struct {
			v, nv, d int
			age      float64
		}{
			"main": {rep.SQS.Main.Visible, rep.SQS.Main.NotVisible, rep.SQS.Main.Delayed, rep.SQS.Main.OldestAgeSeconds},
			"dlq":  {rep.SQS.DLQ.Visible, rep.SQS.DLQ.NotVisible, rep.SQS.DLQ.Delayed, rep.SQS.DLQ.OldestAgeSeconds},
		} {
			g("sqs_messages", float64(q.v), name, "visible")
			g("sqs_messages", float64(q.nv), name, "not_visible")
			g("sqs_messages", float64(q.d), name, "delayed")
			g("sqs_oldest", q.age, name)
		}
	}
	for status, n := range rep.Requests.ByStatus {
		g("requests", float64(n), status)
	}
	g("oldest_queued", rep.Requests.OldestQueuedAgeSeconds)
	g("dead", float64(rep.Requests.DeadLettered))
	if h := rep.Health; h != nil {
		g("payments_unresolved", float64(h.PaymentsUnresolved))
		g("payments_oldest", h.PaymentsOldestUnresolvedSecs)
		g("expiry_backlog", h.ExpiryBacklogSeconds)
		g("outbox_lag", h.OutboxLagSeconds)
		paused := 0.0
		if h.CheckoutPaused {
			paused = 1
		}
		g("checkout_paused", paused)
	}
	for _, w := range rep.WaitingRooms {
		g("room_waiting", float64(w.Waiting), w.ProductID.String())
	}
}

func (c *Collector) report() *Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && time.Since(c.lastAt) < cacheFor {
		return c.last
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if c.Leader != nil && !c.Leader(ctx) {
		c.last, c.lastAt = nil, time.Now()
		return nil
	}
	rep, err := c.reporter.Report(ctx, Scope{})
	if err != nil {
		c.logger.Warn("queue figures for metrics failed", "error", err)
		return c.last
	}
	c.last, c.lastAt = rep, time.Now()
	return rep
}
