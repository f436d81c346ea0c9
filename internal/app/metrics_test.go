package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/app"
	"boxoffice/internal/mail"
	"boxoffice/internal/payment"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

func TestMain(m *testing.M) { testfix.VerifyNoLeaks(m) }

// client calls one listener of the process over HTTP.
type client struct {
	t    *testing.T
	base string
}

func (c client) call(method, path, token string, body any, headers ...string) (int, map[string]any) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	out := map[string]any{}
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(c.t, json.Unmarshal(raw, &out), string(raw))
	}
	return resp.StatusCode, out
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// One process as `boxoffice dev` runs it — API, workers, metrics listener —
// with every feature in use: a waiting room, reservations, checkout with
// webhooks, the live availability stream, the store catalog and login, the
// console's session, live view and report, and a rehearsal. Its /metrics
// then parses cleanly, product-labelled series are there and only there,
// no label carries an id other than a product's, and the public API port
// serves no metrics.
func TestMetricsWithEveryFeature(t *testing.T) {
	t.Parallel()
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	api := client{t: t, base: "http://" + apiLn.Addr().String()}
	sim := pspsim.New(pspsim.Config{WebhookURL: api.base + "/v1/webhooks/payments/sim", WebhookSecret: "whsec_metrics"})
	simSrv := httptest.NewServer(sim.Handler())
	testSim := pspsim.New(pspsim.Config{})
	testSimSrv := httptest.NewServer(testSim.Handler())
	t.Cleanup(func() { simSrv.Close(); sim.Close(); testSimSrv.Close(); testSim.Close() })
	sink, err := mail.NewSink("127.0.0.1:0", nil)
	require.NoError(t, err)
	t.Cleanup(sink.Close)

	env := testfix.New(t, testfix.Options{Provider: payment.NewSim(simSrv.URL, 5*time.Second),
		TestModeProvider: payment.NewSim(testSimSrv.URL, 5*time.Second)})
	a := env.App
	cfg := a.Config
	cfg.AdminKey, cfg.WebhookSecrets, cfg.MetricsAddr = "admin-metrics", []string{"whsec_metrics"}, "127.0.0.1:0"
	cfg.SMTPAddr, cfg.MailFrom = sink.Addr(), "tickets@boxoffice.test"
	ctx, cancel := context.WithCancel(context.Background())
	metricsLn, err := a.ListenMetrics()
	require.NoError(t, err)
	// What a dev process runs: the API's parts, the workers, the metrics.
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, append(a.APIParts(a.API(), apiLn), a.WorkersPart(), a.MetricsPart(metricsLn))...)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "a clean stop")
	})
	metrics := client{t: t, base: "http://" + metricsLn.Addr().String()}

	// A product with a waiting room, open now.
	key := env.Tenant.APIKey
	status, p := api.call(http.MethodPost, "/v1/products", key, map[string]any{"slug": "gig", "name": "Gig", "kind": "numbered",
		"capacity": 50, "priceCents": 1500, "currency": "EUR",
		"waitingRoom": map[string]any{"enabled": true, "activeShoppers": 10, "shoppingSeconds": 5}})
	require.Equal(t, http.StatusCreated, status, p)
	id := p["id"].(string)

	// A buyer joins, is admitted, reserves, pays.
	buyer, err := tenant.SignBuyerToken([]byte(env.Tenant.BuyerTokenSecret), env.Tenant.ID, "ana", time.Hour)
	require.NoError(t, err)
	status, join := api.call(http.MethodPost, "/v1/products/"+id+"/queue", buyer, nil)
	require.Contains(t, []int{200, 201, 202}, status, join)
	var access string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, st := api.call(http.MethodGet, "/v1/queue/"+join["queueToken"].(string), "", nil)
		access, _ = st["accessToken"].(string)
		assert.NotEmpty(c, access, st)
	}, 30*time.Second, 200*time.Millisecond)
	status, res := api.call(http.MethodPost, "/v1/products/"+id+"/reservations", buyer, map[string]any{"quantity": 2},
		"Idempotency-Key", "r1", "X-Access-Token", access)
	require.Equal(t, http.StatusAccepted, status, res)
	var hold string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, r := api.call(http.MethodGet, res["statusUrl"].(string), buyer, nil)
		hold, _ = r["holdId"].(string)
		assert.NotEmpty(c, hold, r)
	}, 30*time.Second, 100*time.Millisecond)
	status, order := api.call(http.MethodPost, "/v1/orders", buyer, map[string]any{"holdId": hold, "paymentMethod": "sim_ok",
		"email": "ana@example.test"}, "Idempotency-Key", "o1", "X-Access-Token", access)
	require.Contains(t, []int{200, 201, 202}, status, order)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, o := api.call(http.MethodGet, "/v1/orders/"+order["id"].(string), buyer, nil)
		assert.Equal(c, "CONFIRMED", o["status"], o)
	}, 30*time.Second, 100*time.Millisecond)

	// The live availability stream: its first event.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.base+"/v1/products/"+id+"/availability/stream", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "retry")
	resp.Body.Close()

	// The store: its catalog and a login code.
	status, _ = api.call(http.MethodGet, "/v1/stores/"+env.Tenant.Slug+"/products", "", nil)
	require.Equal(t, http.StatusOK, status)
	bo := map[string]any{"email": "bo@example.test"}
	status, ch := api.call(http.MethodPost, "/v1/stores/"+env.Tenant.Slug+"/login/challenge", "", bo)
	require.Equal(t, http.StatusOK, status, ch)
	challenge, bits := ch["challenge"].(string), int(ch["bits"].(float64))
	require.Positive(t, bits, "a login code costs a proof of work by default")
	status, _ = api.call(http.MethodPost, "/v1/stores/"+env.Tenant.Slug+"/login", "", bo,
		"X-Queue-Challenge", challenge, "X-Queue-Solution", waitingroom.Solve(challenge, bits))
	require.Equal(t, http.StatusAccepted, status)

	// The console: a session, the live view, the report, a rehearsal.
	status, _ = api.call(http.MethodPost, "/v1/console/session", "", map[string]any{"key": key})
	require.Equal(t, http.StatusCreated, status)
	status, _ = api.call(http.MethodGet, "/v1/ops/sales/"+id, cfg.AdminKey, nil)
	require.Equal(t, http.StatusOK, status)
	status, _ = api.call(http.MethodGet, "/v1/products/"+id+"/report", key, nil)
	require.Equal(t, http.StatusOK, status)
	status, reh := api.call(http.MethodPost, "/v1/products/"+id+"/rehearsals", key, map[string]any{"buyers": 20,
		"activeShoppers": 20, "shoppingSeconds": 2, "arrivalSeconds": 2})
	require.Equal(t, http.StatusAccepted, status, reh)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, r := api.call(http.MethodGet, "/v1/rehearsals/"+reh["id"].(string), key, nil)
		assert.Equal(c, "DONE", r["status"], r)
	}, 60*time.Second, 200*time.Millisecond)
	status, _ = api.call(http.MethodGet, "/v1/no-such-thing/"+id, "", nil)
	require.Equal(t, http.StatusNotFound, status)

	// The public API port has no metrics.
	status, _ = api.call(http.MethodGet, "/metrics", "", nil)
	require.Equal(t, http.StatusNotFound, status)

	// The metrics listener: a clean scrape, as Prometheus parses it. The
	// database gauges are the leader's: wait for this process to lead.
	var families map[string]*dto.MetricFamily
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		families = scrape(t, metrics.base)
		assert.Contains(c, families, "boxoffice_waiting_room_depth")
	}, 30*time.Second, 200*time.Millisecond)
	for _, name := range []string{"boxoffice_reservations_accepted_total", "boxoffice_http_requests_total",
		"boxoffice_admission_rate_per_second", "boxoffice_admitted_total", "boxoffice_waiting_room_depth",
		"boxoffice_payments_unresolved", "boxoffice_outbox_lag_seconds", "boxoffice_invariant_violations_total",
		"boxoffice_river_jobs", "boxoffice_db_pool_acquired_conns"} {
		require.Contains(t, families, name)
	}
	productLabelled := 0
	for name, f := range families {
		require.True(t, strings.HasPrefix(name, "boxoffice_") || strings.HasPrefix(name, "go_") ||
			strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_"), name)
		for _, m := range f.Metric {
			for _, l := range m.GetLabel() {
				if l.GetName() == "product" {
					productLabelled++
					continue
				}
				require.False(t, uuidRE.MatchString(l.GetValue()),
					"%s{%s=%q}: only product labels name an id (no request, order or tenant ids)", name, l.GetName(), l.GetValue())
			}
		}
	}
	require.Positive(t, productLabelled)

	// Labelled counters are there before their first event, at zero.
	for _, l := range families["boxoffice_webhooks_total"].Metric {
		if l.GetLabel()[0].GetValue() == "bad_signature" {
			require.Zero(t, l.GetCounter().GetValue())
		}
	}
	require.Len(t, families["boxoffice_repairs_total"].Metric, 2, "unpublished and stale, from the start")

	// The metrics listener answers for the process's health too (a work
	// process has no API to ask).
	for path, want := range map[string]string{"/livez": "ok", "/readyz": "ready"} {
		resp, err := http.Get(metrics.base + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, want, string(body))
	}
}

// scrape reads the metrics listener and parses it as Prometheus does.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a failing collector fails the scrape")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}
