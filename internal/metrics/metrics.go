// Package metrics defines BoxOffice's Prometheus metrics on a registry that
// main creates and passes down; nothing registers globally.
package metrics

import (
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the counters and histograms of one process. A nil *Metrics is
// valid and records nothing, which keeps tests and tools free of wiring.
type Metrics struct {
	Registry *prometheus.Registry

	httpRequests    *prometheus.CounterVec
	httpDuration    *prometheus.HistogramVec
	accepted        prometheus.Counter
	claimBatchSize  prometheus.Histogram
	claimBatchTime  prometheus.Histogram
	holdsCreated    prometheus.Counter
	holdsExpired    prometheus.Counter
	waitlistOffers  *prometheus.CounterVec
	holdsReleased   prometheus.Counter
	rejections      *prometheus.CounterVec
	claimRetries    prometheus.Counter
	invariantErrors prometheus.Counter
	repaired        *prometheus.CounterVec
	payments        *prometheus.CounterVec
	ordersConfirmed prometheus.Counter
	webhooks        *prometheus.CounterVec
	tenantWebhooks  *prometheus.CounterVec
	endpointsOff    prometheus.Counter
	mismatches      *prometheus.CounterVec
	admissionRate   *prometheus.GaugeVec
	admitted        *prometheus.CounterVec
	jobsRescued     prometheus.Counter
	messagesPutBack prometheus.Counter
	liveSubs        prometheus.Gauge
	liveLag         prometheus.Histogram
	liveDropped     prometheus.Counter
}

// New creates the metrics and registers them, with the Go and process
// collectors, on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "boxoffice_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_reservations_accepted_total", Help: "Reservation requests recorded and enqueued.",
		}),
		claimBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "boxoffice_claim_batch_size", Help: "Requests decided per claim transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		claimBatchTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "boxoffice_claim_batch_duration_seconds", Help: "Duration of claim transactions.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		holdsCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_holds_created_total", Help: "Holds created by claim transactions.",
		}),
		holdsExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_holds_expired_total", Help: "Holds marked expired by the sweeper.",
		}),
		waitlistOffers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_waitlist_offers_total", Help: "Waiting-list offers made to the next in line (made) and ended unused (expired).",
		}, []string{"event"}),
		holdsReleased: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_holds_released_total", Help: "Holds released by their buyers.",
		}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_reservations_rejected_total", Help: "Reservation requests rejected, by reason.",
		}, []string{"reason"}),
		claimRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_claim_retries_total", Help: "Claim transactions retried after losing a race or a deadlock.",
		}),
		invariantErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_invariant_violations_total", Help: "Inventory invariant violations found by the auditor (must stay 0).",
		}),
		repaired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_repairs_total",
			Help: "Requests published again by the gap repair job: unpublished (commit without publish) or stale (published, still QUEUED).",
		}, []string{"kind"}),
		payments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_payment_events_total",
			Help: "Payment events: unknown (timeout/5xx), rate_limited, rejected, declined, late_authorization, voided, captured, capture_failed.",
		}, []string{"event"}),
		ordersConfirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_orders_confirmed_total", Help: "Orders confirmed.",
		}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_webhooks_total", Help: "Provider webhooks by result: accepted, duplicate, bad_signature.",
		}, []string{"result"}),
		tenantWebhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_webhook_attempts_total", Help: "Attempts to deliver events to tenants' webhook endpoints, by result: delivered (2xx), failed.",
		}, []string{"result"}),
		endpointsOff: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_webhook_endpoints_disabled_total", Help: "Tenants' webhook endpoints disabled after failing for BOXOFFICE_WEBHOOK_DISABLE_AFTER.",
		}),
		mismatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_payment_reconciliations_total",
			Help: "What the payment reconciler fixed: resolved, voided, capture_retried.",
		}, []string{"kind"}),
		admissionRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "boxoffice_admission_rate_per_second", Help: "Current waiting-room admission rate (λ after feedback), by product.",
		}, []string{"product"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_admitted_total", Help: "Shoppers admitted from waiting rooms, by product.",
		}, []string{"product"}),
	}
	m.jobsRescued = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "boxoffice_jobs_rescued_total", Help: "Running jobs of dead worker processes made available again by this process.",
	})
	m.messagesPutBack = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "boxoffice_sqs_messages_put_back_total",
		Help: "SQS messages returned to the queue early because their request was locked by another transaction.",
	})
	m.liveSubs = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "boxoffice_availability_subscribers", Help: "Open availability streams (server-sent events) on this process.",
	})
	m.liveLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "boxoffice_availability_fanout_lag_seconds",
		Help:    "From reading a change in the database to writing it to a subscriber's connection.",
		Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2, 5},
	})
	m.liveDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "boxoffice_availability_subscribers_dropped_total", Help: "Availability streams dropped for falling behind.",
	})
	m.Registry.MustRegister(m.admissionRate, m.admitted, m.jobsRescued, m.messagesPutBack, m.liveSubs, m.liveLag, m.liveDropped)
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration, m.accepted, m.claimBatchSize, m.claimBatchTime, m.holdsCreated,
		m.holdsExpired, m.holdsReleased, m.rejections, m.claimRetries, m.invariantErrors, m.repaired,
		m.payments, m.ordersConfirmed, m.webhooks, m.mismatches, m.waitlistOffers, m.tenantWebhooks, m.endpointsOff)
	// Labelled counters start at zero for every value known up front: a
	// rate or an alert on one works before its first event.
	for labels, vec := range map[string]*prometheus.CounterVec{
		"made expired":      m.waitlistOffers,
		"unpublished stale": m.repaired,
		"answered unknown rate_limited rejected declined late_authorization voided captured capture_failed": m.payments,
		"accepted duplicate bad_signature": m.webhooks,
		"resolved voided capture_retried":  m.mismatches,
		"delivered failed":                 m.tenantWebhooks,
	} {
		for _, v := range strings.Fields(labels) {
			vec.WithLabelValues(v)
		}
	}
	return m
}

// SetBuild publishes boxoffice_build_info: 1, labelled with the version the
// binary was built from and the Go it was built with.
func (m *Metrics) SetBuild(version string) {
	if m == nil {
		return
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "boxoffice_build_info",
		Help: "1, labelled with the version this binary was built from and its Go version."}, []string{"version", "goversion"})
	g.WithLabelValues(version, runtime.Version()).Set(1)
	m.Registry.MustRegister(g)
}

// HTTPRequest records one served request.
func (m *Metrics) HTTPRequest(route, method, code string, d time.Duration) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(route, method, code).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// Accepted counts a recorded reservation request.
func (m *Metrics) Accepted() {
	if m != nil {
		m.accepted.Inc()
	}
}

// ClaimBatch records one committed claim transaction.
func (m *Metrics) ClaimBatch(requests, holds int, d time.Duration) {
	if m == nil {
		return
	}
	m.claimBatchSize.Observe(float64(requests))
	m.claimBatchTime.Observe(d.Seconds())
	m.holdsCreated.Add(float64(holds))
}

// Rejected counts a rejected request.
func (m *Metrics) Rejected(reason string) {
	if m != nil {
		m.rejections.WithLabelValues(reason).Inc()
	}
}

// ClaimRetry counts a retried claim transaction.
func (m *Metrics) ClaimRetry() {
	if m != nil {
		m.claimRetries.Inc()
	}
}

// HoldsExpired counts holds the sweeper expired.
func (m *Metrics) HoldsExpired(n int) {
	if m != nil {
		m.holdsExpired.Add(float64(n))
	}
}

// WaitlistOffers counts waiting-list offers made and offers that ran out.
func (m *Metrics) WaitlistOffers(made, expired int) {
	if m != nil {
		m.waitlistOffers.WithLabelValues("made").Add(float64(made))
		m.waitlistOffers.WithLabelValues("expired").Add(float64(expired))
	}
}

// HoldReleased counts a released hold.
func (m *Metrics) HoldReleased() {
	if m != nil {
		m.holdsReleased.Inc()
	}
}

// InvariantViolations counts violations the auditor found.
func (m *Metrics) InvariantViolations(n int) {
	if m != nil {
		m.invariantErrors.Add(float64(n))
	}
}

// WebhookAttempt counts an attempt to deliver to a tenant's endpoint.
func (m *Metrics) WebhookAttempt(delivered bool) {
	if m != nil {
		m.tenantWebhooks.WithLabelValues(map[bool]string{true: "delivered", false: "failed"}[delivered]).Inc()
	}
}

// WebhookEndpointDisabled counts an endpoint disabled for its failures.
func (m *Metrics) WebhookEndpointDisabled() {
	if m != nil {
		m.endpointsOff.Inc()
	}
}

// Repaired counts requests the repair job published again, by kind.
func (m *Metrics) Repaired(kind string, n int) {
	if m != nil {
		m.repaired.WithLabelValues(kind).Add(float64(n))
	}
}

// PaymentEvent counts a payment event.
func (m *Metrics) PaymentEvent(event string) {
	if m != nil {
		m.payments.WithLabelValues(event).Inc()
	}
}

// OrderConfirmed counts a confirmed order.
func (m *Metrics) OrderConfirmed() {
	if m != nil {
		m.ordersConfirmed.Inc()
	}
}

// Webhook counts a received webhook by result.
func (m *Metrics) Webhook(result string) {
	if m != nil {
		m.webhooks.WithLabelValues(result).Inc()
	}
}

// Reconciled counts what the payment reconciler fixed.
func (m *Metrics) Reconciled(kind string, n int) {
	if m != nil && n > 0 {
		m.mismatches.WithLabelValues(kind).Add(float64(n))
	}
}

// Admission records a waiting room's current rate and new admissions.
func (m *Metrics) Admission(product string, rate float64, admitted int64) {
	if m != nil {
		m.admissionRate.WithLabelValues(product).Set(rate)
		m.admitted.WithLabelValues(product).Add(float64(admitted))
	}
}

// JobsRescued counts jobs of dead worker processes made available again.
func (m *Metrics) JobsRescued(n int) {
	if m != nil {
		m.jobsRescued.Add(float64(n))
	}
}

// MessagesPutBack counts SQS messages returned early to the queue.
func (m *Metrics) MessagesPutBack(n int) {
	if m != nil && n > 0 {
		m.messagesPutBack.Add(float64(n))
	}
}

// LiveSubscribers moves the count of open availability streams.
func (m *Metrics) LiveSubscribers(delta int) {
	if m != nil {
		m.liveSubs.Add(float64(delta))
	}
}

// LiveLag records one event's fan-out lag.
func (m *Metrics) LiveLag(d time.Duration) {
	if m != nil {
		m.liveLag.Observe(d.Seconds())
	}
}

// LiveDropped counts a stream dropped for falling behind.
func (m *Metrics) LiveDropped() {
	if m != nil {
		m.liveDropped.Inc()
	}
}

// Handler serves the registry in Prometheus's text format. Served on the
// process's metrics listener, never on the public API: product-labelled
// series name every tenant's products.
func (m *Metrics) Handler(errorLog promhttp.Logger) http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{ErrorLog: errorLog})
}
