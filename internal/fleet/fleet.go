// Package fleet runs a BoxOffice deployment split as in production — its
// own PostgreSQL cluster, `serve` and `work` processes of the binary — and
// drives it over HTTP like shoppers would, for the fault suite
// (internal/faults) and the fault benchmark (boxoffice bench faults).
package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/atrest"
	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/proctest"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
)

// T is the fleet's caller: a test or a benchmark run.
type T = proctest.T

// AdminKey is the fleet's platform admin key.
const AdminKey = "fault-admin-key"

// Fleet is a deployment split as in production: its own PostgreSQL, one or
// more `serve` and `work` processes.
type Fleet struct {
	t       T
	Cluster *proctest.Cluster
	URL     string
	Pool    *pgxpool.Pool
	Env     proctest.Env // shared by every process
	API     string       // base URL of the current serve process, or of the balancer
	APIPort int
	// backendPorts are the API processes' ports behind a Balancer.
	backendPorts []int
	HTTP         *http.Client

	TenantID uuid.UUID
	Secret   string
	APIKey   string
}

// New starts a cluster and migrates it; processes start on demand.
func New(t T, env proctest.Env) *Fleet {
	t.Helper()
	c := proctest.NewCluster(t)
	return NewOn(t, c, c.URL("boxoffice"), env)
}

// NewOn is New on a cluster the caller made, reached at url (several hosts,
// for a failover).
func NewOn(t T, c *proctest.Cluster, url string, env proctest.Env) *Fleet {
	t.Helper()
	f := &Fleet{t: t, Cluster: c, URL: url,
		HTTP: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	t.Cleanup(f.HTTP.CloseIdleConnections)
	f.Env = proctest.Env{
		"DATABASE_URL": f.URL, "BOXOFFICE_ADMIN_KEY": AdminKey, "BOXOFFICE_LOG_LEVEL": "info",
		"BOXOFFICE_RATE_LIMIT_IP": "0", "BOXOFFICE_RATE_LIMIT_BUYER": "0", "BOXOFFICE_RATE_LIMIT_ANY": "0",
		"BOXOFFICE_STREAMS_PER_CLIENT": "0", "BOXOFFICE_LOGIN_CHALLENGE_BITS": "0",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
		"BOXOFFICE_SECRETS_KEY": atrest.Generate("fleet"),
	}
	for k, v := range env {
		f.Env[k] = v
	}
	proctest.Run(t, f.Env, "migrate")
	pool, err := db.Open(context.Background(), f.URL, db.PoolOptions{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	f.Pool = pool
	// Fixed for the fleet's life: every serve process listens there, so
	// shoppers keep one address across restarts.
	f.APIPort = proctest.FreePort(t)
	f.API = fmt.Sprintf("http://127.0.0.1:%d", f.APIPort)
	return f
}

// Remote is a deployment started by other means (the compose fleet of the
// deploy test), driven over HTTP at api with AdminKey.
func Remote(t T, api string) *Fleet {
	return &Fleet{t: t, API: api, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// With returns the fleet's environment plus more.
func (f *Fleet) With(more proctest.Env) proctest.Env {
	env := proctest.Env{}
	for k, v := range f.Env {
		env[k] = v
	}
	for k, v := range more {
		env[k] = v
	}
	return env
}

// Serve starts an API process on the fleet's API port.
func (f *Fleet) Serve(name string) *proctest.Process {
	f.t.Helper()
	return f.serveOn(name, f.APIPort)
}

func (f *Fleet) serveOn(name string, port int) *proctest.Process {
	metrics := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(f.t))
	p := proctest.Start(f.t, name, f.With(proctest.Env{
		"BOXOFFICE_ADDR": fmt.Sprintf("127.0.0.1:%d", port), "BOXOFFICE_METRICS_ADDR": metrics}), "serve")
	proctest.WaitHTTP(f.t, fmt.Sprintf("http://127.0.0.1:%d/healthz", port), 30*time.Second)
	p.Metrics = "http://" + metrics + "/metrics"
	return p
}

// Worker is a `work` process and its River client ID.
type Worker struct {
	*proctest.Process
	ClientID string
}

var clientIDLog = regexp.MustCompile(`"msg":"workers running".*"client":"([^"]+)"`)

// Work starts a worker process and waits until it runs.
func (f *Fleet) Work(name string, more proctest.Env) *Worker {
	f.t.Helper()
	metrics := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(f.t))
	env := f.With(more)
	env["BOXOFFICE_METRICS_ADDR"] = metrics
	p := proctest.Start(f.t, name, env, "work")
	logs := p.WaitLog(`"workers running"`, 30*time.Second)
	m := clientIDLog.FindStringSubmatch(logs)
	require.NotNil(f.t, m, "client id logged")
	p.Metrics = "http://" + metrics + "/metrics"
	return &Worker{Process: p, ClientID: m[1]}
}

// Call sends a JSON request to the API.
func (f *Fleet) Call(method, path, token string, body any, headers ...string) (int, map[string]any, error) {
	var r io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, f.API+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, nil
}

// MustCall is call that fails the test on a transport error or another status.
func (f *Fleet) MustCall(want int, method, path, token string, body any, headers ...string) map[string]any {
	f.t.Helper()
	code, out, err := f.Call(method, path, token, body, headers...)
	require.NoError(f.t, err)
	require.Equal(f.t, want, code, "%s %s: %v", method, path, out)
	return out
}

// Tenant creates the fleet's tenant.
func (f *Fleet) Tenant() {
	f.t.Helper()
	out := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/tenants", AdminKey,
		map[string]any{"slug": "t-" + uuid.NewString()[:8], "name": "Fault Arena"})
	f.TenantID = uuid.MustParse(out["id"].(string))
	f.Secret, f.APIKey = out["buyerTokenSecret"].(string), out["apiKey"].(string)
}

// Product creates a numbered product and returns its id.
func (f *Fleet) Product(capacity int) uuid.UUID {
	f.t.Helper()
	out := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "p-" + uuid.NewString()[:8], "name": "Fault Night", "kind": "numbered", "capacity": capacity,
		"priceCents": 1000, "currency": "EUR"})
	return uuid.MustParse(out["id"].(string))
}

func (f *Fleet) BuyerToken(buyer string) string {
	f.t.Helper()
	tok, err := tenant.SignBuyerToken([]byte(f.Secret), f.TenantID, buyer, time.Hour)
	require.NoError(f.t, err)
	return tok
}

// Took says whether code is an answer of a create (a reservation, an
// order) that took the request: 202 recorded and not yet decided, 201
// created — or decided in the answer, as a reservation refused at once
// once sold out — and 200 its idempotency key replayed.
func Took(code int) bool {
	return code == http.StatusAccepted || code == http.StatusCreated || code == http.StatusOK
}

// Load reserves one number for each of n new buyers from workers
// goroutines, retrying each request with its own Idempotency-Key until the
// API answers 202 or 200 (a refused connection or a 503 is retried; any
// other answer fails the test). It returns the statuses seen.
func (f *Fleet) Load(product uuid.UUID, n, workers int) map[int]int {
	f.t.Helper()
	var next atomic.Int64
	return f.load(product, workers, func() bool { return next.Add(1) <= int64(n) })
}

// LoadDuring runs shoppers as Load does, without pause, for as long as
// event runs, and returns what they saw.
func (f *Fleet) LoadDuring(product uuid.UUID, workers int, event func()) map[int]int {
	f.t.Helper()
	var stop atomic.Bool
	done := make(chan map[int]int, 1)
	go func() { done <- f.load(product, workers, func() bool { return !stop.Load() }) }()
	event()
	stop.Store(true)
	return <-done
}

// load runs workers shoppers while more says so.
func (f *Fleet) load(product uuid.UUID, workers int, more func() bool) map[int]int {
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if !more() {
					return
				}
				buyer := "b-" + uuid.NewString()[:12]
				tok, err := tenant.SignBuyerToken([]byte(f.Secret), f.TenantID, buyer, time.Hour)
				if !assert.NoError(f.t, err) {
					return
				}
				if !f.reserveOne(product, tok, func(code int) {
					mu.Lock()
					seen[code]++
					mu.Unlock()
				}) {
					return
				}
			}
		}()
	}
	wg.Wait()
	return seen
}

// reserveOne reserves one number of product for the buyer of tok with a
// key of its own, retried through 503s and lost connections for 90 s at
// most; saw sees each answer's status (-1: no answer). It reports whether
// the reservation was accepted; any other answer fails the test.
func (f *Fleet) reserveOne(product uuid.UUID, tok string, saw func(code int)) bool {
	key := uuid.NewString()
	for deadline := time.Now().Add(90 * time.Second); ; {
		code, out, err := f.Call(http.MethodPost, "/v1/products/"+product.String()+"/reservations", tok,
			map[string]any{"quantity": 1}, "Idempotency-Key", key)
		if err != nil {
			saw(-1)
		} else {
			saw(code)
		}
		switch {
		case err == nil && Took(code):
			return true
		case err == nil && code != http.StatusServiceUnavailable:
			assert.Fail(f.t, "unexpected answer", "%d %v", code, out)
			return false
		case time.Now().After(deadline):
			assert.Fail(f.t, "no answer within 90 s", "last: %d %v %v", code, out, err)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Count runs a counting query on the fleet's database.
func (f *Fleet) Count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// LoadWithFault runs Load(p, n, workers) and, once more than n/5 requests
// are recorded, the fault, while the shoppers keep going; it returns what
// Load saw.
func (f *Fleet) LoadWithFault(p uuid.UUID, n, workers int, fault func()) map[int]int {
	f.t.Helper()
	done := make(chan map[int]int, 1)
	go func() { done <- f.Load(p, n, workers) }()
	f.WaitRequests(n/5, 30*time.Second)
	fault()
	return <-done
}

// WaitRequests waits until more than n requests are recorded.
func (f *Fleet) WaitRequests(n int, within time.Duration) {
	f.t.Helper()
	require.EventuallyWithT(f.t, func(c *assert.CollectT) {
		var got int
		assert.NoError(c, f.Pool.QueryRow(context.Background(), `SELECT count(*) FROM reservation_requests`).Scan(&got))
		assert.Greater(c, got, n)
	}, within, 10*time.Millisecond)
}

// WaitDecided waits until no request is QUEUED and returns how long it took.
func (f *Fleet) WaitDecided(within time.Duration) time.Duration {
	f.t.Helper()
	start := time.Now()
	require.EventuallyWithT(f.t, func(c *assert.CollectT) {
		var n int
		assert.NoError(c, f.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM reservation_requests WHERE status = 'QUEUED'`).Scan(&n))
		assert.Zero(c, n, "requests still QUEUED")
	}, within, 100*time.Millisecond)
	return time.Since(start)
}

// RunningClaimOwner waits for a running claim job and returns the River
// client running it.
func (f *Fleet) RunningClaimOwner(within time.Duration) string {
	f.t.Helper()
	var owner string
	require.EventuallyWithT(f.t, func(c *assert.CollectT) {
		err := f.Pool.QueryRow(context.Background(), `
			SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job
			WHERE kind = 'claim_product' AND state = 'running' LIMIT 1`).Scan(&owner)
		assert.NoError(c, err, "a running claim job")
	}, within, 20*time.Millisecond)
	return owner
}

// RequireSound checks the promises: nothing sold twice, the inventory's
// bitmap and counters agree with the claims, every request decided.
func (f *Fleet) RequireSound() {
	f.t.Helper()
	v, _, err := reservation.AuditAll(context.Background(), f.Pool, checkout.AuditSales)
	require.NoError(f.t, err)
	require.Empty(f.t, v, "invariant violations")
	require.Zero(f.t, f.Count(`
		SELECT count(*) FROM (SELECT n FROM holds h, unnest(h.numbers) n
		                      WHERE h.state = 'CONVERTED' OR (h.state = 'ACTIVE' AND h.expires_at > now())
		                      GROUP BY h.product_id, n HAVING count(*) > 1) d`), "a number in two live holds")
	require.Zero(f.t, f.Count(`SELECT count(*) FROM reservation_requests WHERE status = 'QUEUED'`))
}

// Decisions are request → decision times of the requests recorded in a
// window, from the database (processed_at − created_at).
type Decisions struct {
	N             int
	P50, P99, Max time.Duration
}

// DecisionsBetween reads the decisions of the requests recorded between
// from and to, of one product when product is not uuid.Nil.
func (f *Fleet) DecisionsBetween(product uuid.UUID, from, to time.Time) Decisions {
	f.t.Helper()
	var d Decisions
	var p50, p99, mx float64
	require.NoError(f.t, f.Pool.QueryRow(context.Background(), `
		WITH w AS (SELECT extract(epoch FROM processed_at - created_at) AS s FROM reservation_requests
		           WHERE created_at BETWEEN $1 AND $2 AND ($3 = '00000000-0000-0000-0000-000000000000'::uuid OR product_id = $3))
		SELECT count(*), coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY s), 0),
		       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY s), 0), coalesce(max(s), 0)
		FROM w`, from, to, product).Scan(&d.N, &p50, &p99, &mx))
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	d.P50, d.P99, d.Max = sec(p50), sec(p99), sec(mx)
	return d
}

// FirstDecisionAfter is how long after t0 the first request was decided.
func (f *Fleet) FirstDecisionAfter(t0 time.Time) time.Duration {
	f.t.Helper()
	var first *time.Time
	require.NoError(f.t, f.Pool.QueryRow(context.Background(),
		`SELECT min(processed_at) FROM reservation_requests WHERE processed_at > $1`, t0).Scan(&first))
	require.NotNil(f.t, first, "nothing was decided after %s: the fault came too late", t0)
	return first.Sub(t0)
}

// Scrape reads a process's metrics.
// t is the test, or an *assert.CollectT inside a condition.
func (f *Fleet) Scrape(t require.TestingT, p *proctest.Process) string {
	resp, err := f.HTTP.Get(p.Metrics)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	return string(raw)
}

// MetricValue sums the samples of a series name in a scrape.
func MetricValue(scrape, name string) float64 {
	var sum float64
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			var v float64
			fields := strings.Fields(line)
			_, _ = fmt.Sscan(fields[len(fields)-1], &v)
			sum += v
		}
	}
	return sum
}
