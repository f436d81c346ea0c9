package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"boxoffice/internal/fleet"
	"boxoffice/internal/proctest"
	"boxoffice/internal/tenant"
)

// BurstConfig sizes the burst.
type BurstConfig struct {
	Requests int // default 30,000
	Conns    int // default 256
	Numbers  int // the raffle's size (default 10,000)
	// Profiles, when set, is a folder where serve and work write CPU
	// profiles of their run (serve-MODE.pprof, work-MODE.pprof).
	Profiles string
	// Modes are the designs to run, of "pipeline" and "synchronous" (both
	// when empty, as make bench does): one alone, for working on it.
	Modes []string
	// First is the size of the first burst each mode's processes serve,
	// numbers asked on a product of its own, before the measured ones
	// (0: the measured bursts meet processes seconds old).
	First int
}

// BurstRun is one mode and one kind of request.
type BurstRun struct {
	Mode           string         `json:"mode" doc:"pipeline (accept, queue, claim) or synchronous (claim in the request)"`
	Ask            string         `json:"ask" doc:"numbers: one random number each; quantity: {\"quantity\":1}"`
	Learn          string         `json:"learn,omitempty" doc:"how each client learns its decision after the answer: poll (GET again, backing off from 600 ms, as the store did) or wait (GET with Prefer: wait=15); none when empty"`
	StatusReads    int            `json:"statusReads" doc:"GET /v1/reservations/{id} the clients made to learn their decisions"`
	CPUPerDecided  CPUShare       `json:"cpuPerDecided" doc:"CPU per decided request, by process"`
	Requests       int            `json:"requests"`
	Errors         int            `json:"errors" doc:"answers other than 200/202 (5xx included)"`
	Status5xx      int            `json:"status5xx"`
	AnsweredPerSec float64        `json:"answeredPerSec"`
	AnswerP50      time.Duration  `json:"answerP50"`
	AnswerP99      time.Duration  `json:"answerP99"`
	AnswerP999     time.Duration  `json:"answerP999"`
	DecidedPerSec  float64        `json:"decidedPerSec" doc:"requests ÷ time from the first send to the last decision"`
	DecisionP50    time.Duration  `json:"decisionP50" doc:"request → decision, from the database (processed_at − created_at)"`
	DecisionP99    time.Duration  `json:"decisionP99"`
	FirstSecondP50 time.Duration  `json:"firstSecondP50" doc:"the same, for requests recorded in the burst's first second"`
	FirstSecondP99 time.Duration  `json:"firstSecondP99"`
	Held           int            `json:"held"`
	Rejected       map[string]int `json:"rejected"`
	Undecided      int            `json:"undecided" doc:"accepted and not decided within the wait (must be 0)"`
	Oversold       int            `json:"oversold" doc:"numbers in two live holds (must be 0)"`
	ServeCPU       time.Duration  `json:"serveCpu"`
	WorkCPU        time.Duration  `json:"workCpu"`
	LoadCPU        time.Duration  `json:"loadCpu" doc:"the load generator (this process)"`
	DatabaseCPU    time.Duration  `json:"databaseCpu" doc:"the benchmark's PostgreSQL cluster: its processes, those it reaped included"`
	DBTxPerSec     float64        `json:"dbTxPerSec"`
	Checked        int            `json:"checked" doc:"decisions polled over HTTP and found as the database says"`
	ClaimBatches   int            `json:"claimBatches" doc:"claim transactions (the work process's metrics)"`
	ClaimBatchMean float64        `json:"claimBatchMean" doc:"requests per claim transaction"`
	ClaimTxMean    time.Duration  `json:"claimTxMean" doc:"mean claim transaction duration"`
	ClaimRetries   int            `json:"claimRetries"`
	Timeline       []BurstStep    `json:"timeline" doc:"the burst in 250 ms steps from the first send"`
	Statements     []Statement    `json:"statements" doc:"the database's busiest statements of the run (pg_stat_statements, when installed)"`
}

// CPUShare is CPU time per decided request of each process of a run.
type CPUShare struct {
	Serve    time.Duration `json:"serve"`
	Work     time.Duration `json:"work"`
	Database time.Duration `json:"database"`
	Total    time.Duration `json:"total" doc:"serve + work + database (the load generator apart)"`
}

// Statement is one statement's share of a run's database time.
type Statement struct {
	Query  string        `json:"query"`
	Calls  int64         `json:"calls"`
	Rows   int64         `json:"rows"`
	Total  time.Duration `json:"total"`
	PerRow time.Duration `json:"perRow" doc:"total ÷ max(rows, calls)"`
}

// BurstStep is 250 ms of the burst: requests recorded and decided in it,
// and how long the ones recorded in it waited for their decision.
type BurstStep struct {
	At         float64       `json:"at" doc:"seconds from the first send"`
	Recorded   int           `json:"recorded"`
	Decided    int           `json:"decided"`
	WaitP50    time.Duration `json:"waitP50"`
	WaitMax    time.Duration `json:"waitMax"`
	QueuedLeft int           `json:"queuedLeft" doc:"recorded and not yet decided at the step's end"`
	AnswerP99  time.Duration `json:"answerP99" doc:"p99 answer of the requests sent in the step"`
}

// BurstResult is the pipeline against the synchronous baseline.
type BurstResult struct {
	Runs []BurstRun `json:"runs"`
	// FirstBursts are the processes' first bursts, one a mode: what
	// processes seconds old pay.
	FirstBursts []BurstRun `json:"firstBursts"`
	// Ratios, pipeline ÷ synchronous, for random numbers.
	DecidedRatio float64 `json:"decidedRatio"`
	// WaitCPURatio is the CPU per decided request, status reads included,
	// of clients that wait for the decision ÷ of clients that poll.
	WaitCPURatio float64 `json:"waitCpuRatio"`
	// AnswerCPURatio is the same for clients whose reservation's answer
	// waits for the decision (Prefer: wait on the create, as the store
	// sends it) ÷ of clients that poll.
	AnswerCPURatio float64 `json:"answerCpuRatio"`
}

// answerWait is the wait the "answer" clients ask their reservation's
// answer for, as the store does.
const answerWait = "wait=2"

// Burst plays a real opening against a deployment split as in production —
// its own PostgreSQL cluster, `serve` and `work` processes of this
// executable, auth and rate limits on (this process is the trusted proxy and
// sends X-Forwarded-For from one address per connection) — from this
// process over HTTP: Requests reservations from Conns connections, each from
// its own buyer with its own token, for one uniformly random number of a
// Numbers-number raffle (most collide), then the same asking for
// {"quantity":1}. It does so twice: with the queue (the pipeline), and with
// each request decided in its own transaction in the request (the
// synchronous design, BOXOFFICE_CLAIM_IN_REQUEST), and reports both. Each
// design's processes first serve a burst of First requests, reported apart.
func Burst(out io.Writer, c BurstConfig) (*BurstResult, error) {
	if c.Requests == 0 {
		c.Requests = 30_000
	}
	if c.Conns == 0 {
		c.Conns = 256
	}
	if c.Numbers == 0 {
		c.Numbers = 10_000
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("burst: own executable: %w", err)
	}
	proctest.SetBinary(exe)
	return asScenario("burst", func(t proctest.T) *BurstResult { return burst(t, out, c) })
}

func burst(t proctest.T, out io.Writer, c BurstConfig) *BurstResult {
	f := fleet.New(t, proctest.Env{
		// As in production: rate limits on, the benchmark as the proxy.
		"BOXOFFICE_RATE_LIMIT_IP": "200", "BOXOFFICE_RATE_LIMIT_BUYER": "20",
		// The per-client cap of every call is not one of the limits the
		// benchmark plays: all its shoppers come from one address.
		"BOXOFFICE_RATE_LIMIT_ANY":  "0",
		"BOXOFFICE_TRUSTED_PROXIES": "127.0.0.1/32",
		// Sessions open before the opening, as the deployment files set.
		"BOXOFFICE_DB_MIN_CONNS": "20",
	})
	res := &BurstResult{}
	// Per-statement timings, where the installation has them.
	_, statErr := f.Pool.Exec(context.Background(), `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	withStatements := statErr == nil
	fmt.Fprintf(out, "burst: %d requests from %d connections, each from its own buyer, on a %d-number raffle; serve and work as processes, own PostgreSQL\n",
		c.Requests, c.Conns, c.Numbers)
	if c.Profiles != "" {
		require.NoError(t, os.MkdirAll(c.Profiles, 0o755), "burst: the profiles folder")
	}
	modes := c.Modes
	if len(modes) == 0 {
		modes = []string{"pipeline", "synchronous"}
	}
	for _, mode := range modes {
		env := proctest.Env{}
		if c.Profiles != "" {
			env["BOXOFFICE_CPUPROFILE"] = filepath.Join(c.Profiles, "serve-"+mode+".pprof")
		}
		if mode == "synchronous" {
			env["BOXOFFICE_CLAIM_IN_REQUEST"] = "1"
		}
		serveEnv := f.Env
		f.Env = f.With(env)
		serve := f.Serve("serve-" + mode)
		var workEnv proctest.Env
		if c.Profiles != "" {
			workEnv = proctest.Env{"BOXOFFICE_CPUPROFILE": filepath.Join(c.Profiles, "work-"+mode+".pprof")}
		}
		work := f.Work("work-"+mode, workEnv)
		f.Env = serveEnv
		if f.TenantID == uuid.Nil {
			f.Tenant()
		}
		// Workers run long before an opening: wait until this one decides.
		warmUp(t, f)
		// And an opening's processes have served before. A process seconds
		// old pays in its first burst for what it keeps afterwards — the
		// memory its heap grows into, its sessions' caches in PostgreSQL —
		// so that burst is reported apart, and the measured ones meet
		// processes past it.
		if c.First > 0 {
			first := c
			first.Requests = c.First
			run := burstRun(t, f, first, serve, work.Process, mode, "numbers", "", "first")
			res.FirstBursts = append(res.FirstBursts, run)
			cpu := run.CPUPerDecided
			fmt.Fprintf(out, "  %-11s first    %d requests (numbers), the processes' first burst: answered %6.0f/s (p99 %s); CPU per decided request: serve %s, work %s, database %s, total %s\n",
				mode, run.Requests, run.AnsweredPerSec, ms1(run.AnswerP99), us(cpu.Serve), us(cpu.Work), us(cpu.Database), us(cpu.Total))
		}
		// The pipeline's clients learn their decisions by reading the
		// status: repeated polls, then one waiting read each, then from
		// the reservation's answer, which waits for it.
		kinds := [][2]string{{"numbers", ""}, {"quantity", ""}}
		if mode == "pipeline" {
			kinds = append(kinds, [2]string{"numbers", "poll"}, [2]string{"numbers", "wait"}, [2]string{"numbers", "answer"})
		}
		for _, kind := range kinds {
			ask, learn := kind[0], kind[1]
			if withStatements {
				_, err := f.Pool.Exec(context.Background(), `SELECT pg_stat_statements_reset()`)
				require.NoError(t, err)
			}
			run := burstRun(t, f, c, serve, work.Process, mode, ask, learn, "")
			if withStatements {
				run.Statements = busiestStatements(t, f, 8)
			}
			res.Runs = append(res.Runs, run)
			if learn != "" {
				ask += "+" + learn
			}
			fmt.Fprintf(out, "  %-11s %-8s answered %6.0f/s (p50 %s, p99 %s, p999 %s, errors %d, 5xx %d); decided %6.0f/s; request→decision p50 %s p99 %s, first second p50 %s p99 %s\n",
				mode, ask, run.AnsweredPerSec, ms1(run.AnswerP50), ms1(run.AnswerP99), ms1(run.AnswerP999), run.Errors, run.Status5xx,
				run.DecidedPerSec, ms1(run.DecisionP50), ms1(run.DecisionP99), ms1(run.FirstSecondP50), ms1(run.FirstSecondP99))
			// The timeline is printed while it is short (the pipeline's few
			// seconds); the synchronous runs' minutes are in the report.
			if len(run.Timeline) <= 24 {
				var tl strings.Builder
				for _, st := range run.Timeline {
					fmt.Fprintf(&tl, " %.2fs:+%d/-%d(q%d,p50 %s,a99 %s)", st.At, st.Recorded, st.Decided, st.QueuedLeft,
						ms1(st.WaitP50), ms1(st.AnswerP99))
				}
				fmt.Fprintf(out, "  %-11s %-8s timeline (recorded/decided, queue after, wait p50, answer p99 of those sent):%s\n", mode, ask, tl.String())
			}
			fmt.Fprintf(out, "  %-11s %-8s held %d, rejected %v, undecided %d, OVERSOLD %d; CPU serve %s work %s load %s database %s; database %.0f transactions/s; claim transactions %d (%.0f requests, %s each, %d retried); %d decisions checked over HTTP\n",
				mode, ask, run.Held, run.Rejected, run.Undecided, run.Oversold, run.ServeCPU.Round(10*time.Millisecond),
				run.WorkCPU.Round(10*time.Millisecond), run.LoadCPU.Round(10*time.Millisecond), run.DatabaseCPU.Round(10*time.Millisecond), run.DBTxPerSec, run.ClaimBatches, run.ClaimBatchMean, ms1(run.ClaimTxMean),
				run.ClaimRetries, run.Checked)
			cpu := run.CPUPerDecided
			fmt.Fprintf(out, "  %-11s %-8s CPU per decided request: serve %s, work %s, database %s, total %s; %d status reads\n",
				mode, ask, us(cpu.Serve), us(cpu.Work), us(cpu.Database), us(cpu.Total), run.StatusReads)
			for _, st := range run.Statements {
				fmt.Fprintf(out, "  %-11s %-8s   %7.0fms %7d calls %8d rows %6.1fµs/row  %s\n", mode, ask,
					float64(st.Total.Microseconds())/1000, st.Calls, st.Rows, float64(st.PerRow.Nanoseconds())/1000, st.Query)
			}
		}
		_ = serve.Stop(10 * time.Second)
		_ = work.Stop(10 * time.Second)
	}
	find := func(mode, ask, learn string) *BurstRun {
		for i := range res.Runs {
			if r := &res.Runs[i]; r.Mode == mode && r.Ask == ask && r.Learn == learn {
				return r
			}
		}
		return nil
	}
	if p, s := find("pipeline", "numbers", ""), find("synchronous", "numbers", ""); p != nil && s != nil && s.DecidedPerSec > 0 {
		res.DecidedRatio = p.DecidedPerSec / s.DecidedPerSec
		fmt.Fprintf(out, "  ratio decided/s pipeline ÷ synchronous (random numbers): %.2fx (target ≥ 2x)\n", res.DecidedRatio)
	}
	if poll := find("pipeline", "numbers", "poll"); poll != nil && poll.CPUPerDecided.Total > 0 {
		for _, k := range []struct {
			learn, says string
			ratio       *float64
		}{{"wait", "waiting", &res.WaitCPURatio}, {"answer", "decided in the answer", &res.AnswerCPURatio}} {
			r := find("pipeline", "numbers", k.learn)
			if r == nil {
				continue
			}
			*k.ratio = float64(r.CPUPerDecided.Total) / float64(poll.CPUPerDecided.Total)
			fmt.Fprintf(out, "  CPU per decided request with the status reads, %s ÷ repeated polls: %s ÷ %s = %.2fx (%d reads ÷ %d)\n",
				k.says, us(r.CPUPerDecided.Total), us(poll.CPUPerDecided.Total), *k.ratio, r.StatusReads, poll.StatusReads)
		}
	}
	f.RequireSound()
	return res
}

func ms1(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d.Nanoseconds())/1000) }

// warmUp reserves on a product of its own until the deployment decides,
// so the burst meets running workers, as an opening does.
func warmUp(t proctest.T, f *fleet.Fleet) {
	p := f.Product(10)
	code, body, err := f.Call(http.MethodPost, "/v1/products/"+p.String()+"/reservations", f.BuyerToken("warm-up"),
		map[string]any{"quantity": 1}, "Idempotency-Key", uuid.NewString(), "X-Forwarded-For", "10.254.0.1")
	require.NoError(t, err)
	require.True(t, fleet.Took(code), "%d %v", code, body)
	deadline := time.Now().Add(time.Minute)
	for f.Count(`SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`, p) > 0 {
		require.True(t, time.Now().Before(deadline), "the warm-up request was not decided within a minute")
		time.Sleep(20 * time.Millisecond)
	}
}

// burstRun sends the burst at a fresh product and measures it; label
// tells its buyers from other runs' of the same kind.
func burstRun(t proctest.T, f *fleet.Fleet, c BurstConfig, serve, work *proctest.Process, mode, ask, learn, label string) BurstRun {
	run := BurstRun{Mode: mode, Ask: ask, Learn: learn, Requests: c.Requests, Rejected: map[string]int{}}
	product := f.Product(c.Numbers)
	path := f.API + "/v1/products/" + product.String() + "/reservations"
	// Every buyer's token is signed before the burst: a shopper arrives with
	// one.
	tokens := make([]string, c.Requests)
	for i := range tokens {
		tok, err := tenant.SignBuyerToken([]byte(f.Secret), f.TenantID, fmt.Sprintf("%s-%s%s%s-%d", mode, ask, learn, label, i), time.Hour)
		require.NoError(t, err)
		tokens[i] = tok
	}
	// fasthttp's client: net/http's took a third of the service's CPU on
	// the same two cores, and real load's client costs are not on the
	// service's machine. One connection per sender, as browsers would.
	addr := strings.TrimPrefix(f.API, "http://")
	client := &fasthttp.HostClient{Addr: addr, MaxConns: c.Conns, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxIdleConnDuration: time.Minute}
	defer client.CloseIdleConnections()

	// The clients' status reads, on as many connections again as the
	// reservations (a browser keeps a few open to the API), queued for one
	// when all are taken.
	readers := &fasthttp.HostClient{Addr: addr, MaxConns: c.Conns, MaxConnWaitTimeout: time.Minute,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxIdleConnDuration: time.Minute}
	defer readers.CloseIdleConnections()
	var learners sync.WaitGroup
	var reads atomic.Int64
	learnDecision := func(id, token, forwarded string) {
		delay := 400 * time.Millisecond
		for {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI(f.API + "/v1/reservations/" + id)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("X-Forwarded-For", forwarded)
			if learn != "poll" {
				req.Header.Set("Prefer", "wait=15")
			}
			err := readers.Do(req, resp)
			reads.Add(1)
			code := resp.StatusCode()
			queued := err != nil || code != http.StatusOK || strings.Contains(string(resp.Body()), `"status":"QUEUED"`)
			fasthttp.ReleaseRequest(req)
			fasthttp.ReleaseResponse(resp)
			if !queued {
				return
			}
			if err != nil || code != http.StatusOK {
				time.Sleep(100 * time.Millisecond) // refused or failed: not a hot loop
			}
			if learn == "poll" {
				delay = min(delay*3/2, 3*time.Second)
				time.Sleep(delay)
			}
		}
	}

	ctx := context.Background()
	var txBefore int64
	require.NoError(t, f.Pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&txBefore))
	serveCPU, workCPU, loadCPU, dbCPU := serve.CPU(), work.CPU(), proctest.SelfCPU(), f.Cluster.CPU()
	claimsBefore := f.Scrape(t, work)

	latencies := make([]time.Duration, c.Requests)
	sent := make([]time.Duration, c.Requests) // from start
	ids := make([]string, c.Requests)
	var next atomic.Int64
	var errs, fivexx atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for conn := range c.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(conn), 11))
			forwarded := fmt.Sprintf("10.%d.%d.%d", conn/65536, conn/256%256, conn%256+1)
			for {
				i := int(next.Add(1)) - 1
				if i >= c.Requests {
					return
				}
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI(path)
				req.Header.SetMethod(http.MethodPost)
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", "Bearer "+tokens[i])
				req.Header.Set("Idempotency-Key", "k")
				req.Header.Set("X-Forwarded-For", forwarded)
				if learn == "answer" {
					req.Header.Set("Prefer", answerWait)
				}
				if ask == "numbers" {
					req.SetBodyString(fmt.Sprintf(`{"numbers":[%d]}`, 1+rng.IntN(c.Numbers)))
				} else {
					req.SetBodyString(`{"quantity":1}`)
				}
				t0 := time.Now()
				err := client.Do(req, resp)
				latencies[i], sent[i] = time.Since(t0), t0.Sub(start)
				fasthttp.ReleaseRequest(req)
				if err != nil {
					fasthttp.ReleaseResponse(resp)
					errs.Add(1)
					continue
				}
				var v struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				}
				_ = json.Unmarshal(resp.Body(), &v)
				code := resp.StatusCode()
				fasthttp.ReleaseResponse(resp)
				switch {
				case fleet.Took(code):
					ids[i] = v.ID
					// A decision the answer brought needs no read.
					if learn != "" && v.Status == "QUEUED" {
						learners.Go(func() { learnDecision(v.ID, tokens[i], forwarded) })
					}
				case code >= 500:
					fivexx.Add(1)
					errs.Add(1)
				default:
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	answered := time.Since(start)
	run.Errors, run.Status5xx = int(errs.Load()), int(fivexx.Load())
	run.AnsweredPerSec = float64(c.Requests) / answered.Seconds()
	answers := slices.Clone(latencies)
	slices.Sort(latencies)
	run.AnswerP50, run.AnswerP99, run.AnswerP999 = pct(latencies, 50), pct(latencies, 99), pct(latencies, 99.9)

	// Wait for every accepted request to be decided (and learnt).
	learners.Wait()
	run.StatusReads = int(reads.Load())
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && f.Count(`SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`, product) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	run.Undecided = f.Count(`SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`, product)
	run.ServeCPU, run.WorkCPU, run.LoadCPU = serve.CPU()-serveCPU, work.CPU()-workCPU, proctest.SelfCPU()-loadCPU
	run.DatabaseCPU = f.Cluster.CPU() - dbCPU
	claimsAfter := f.Scrape(t, work)
	delta := func(name string) float64 {
		return fleet.MetricValue(claimsAfter, name) - fleet.MetricValue(claimsBefore, name)
	}
	run.ClaimBatches = int(delta("boxoffice_claim_batch_size_count"))
	run.ClaimRetries = int(delta("boxoffice_claim_retries_total"))
	if run.ClaimBatches > 0 {
		run.ClaimBatchMean = delta("boxoffice_claim_batch_size_sum") / float64(run.ClaimBatches)
		run.ClaimTxMean = time.Duration(delta("boxoffice_claim_batch_duration_seconds_sum") / float64(run.ClaimBatches) * float64(time.Second))
	}
	var last time.Time
	require.NoError(t, f.Pool.QueryRow(ctx, `SELECT max(processed_at) FROM reservation_requests WHERE product_id = $1`, product).Scan(&last))
	if d := last.Sub(start); d > 0 {
		run.DecidedPerSec = float64(c.Requests-run.Errors) / d.Seconds()
	}
	decided := time.Duration(max(c.Requests-run.Errors, 1))
	run.CPUPerDecided = CPUShare{Serve: run.ServeCPU / decided, Work: run.WorkCPU / decided, Database: run.DatabaseCPU / decided,
		Total: (run.ServeCPU + run.WorkCPU + run.DatabaseCPU) / decided}
	var txAfter int64
	_, _ = f.Pool.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
	require.NoError(t, f.Pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&txAfter))
	if d := last.Sub(start); d > 0 {
		run.DBTxPerSec = float64(txAfter-txBefore) / d.Seconds()
	}

	// Decision times from the database, overall and for the first second.
	var p50, p99, f50, f99 float64
	require.NoError(t, f.Pool.QueryRow(ctx, `
		WITH r AS (SELECT created_at, extract(epoch FROM processed_at - created_at) AS d
		           FROM reservation_requests WHERE product_id = $1 AND processed_at IS NOT NULL)
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d), percentile_cont(0.99) WITHIN GROUP (ORDER BY d),
		       coalesce((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d) FROM r WHERE created_at < (SELECT min(created_at) FROM r) + interval '1 second'), 0),
		       coalesce((SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY d) FROM r WHERE created_at < (SELECT min(created_at) FROM r) + interval '1 second'), 0)
		FROM r`, product).Scan(&p50, &p99, &f50, &f99))
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	run.DecisionP50, run.DecisionP99, run.FirstSecondP50, run.FirstSecondP99 = sec(p50), sec(p99), sec(f50), sec(f99)

	run.Timeline = burstTimeline(t, f, product, start)
	addAnswerP99(run.Timeline, sent, answers)
	rows, err := f.Pool.Query(ctx, `SELECT status, coalesce(reason, ''), count(*) FROM reservation_requests WHERE product_id = $1 GROUP BY 1, 2`, product)
	require.NoError(t, err)
	for rows.Next() {
		var status, reason string
		var n int
		require.NoError(t, rows.Scan(&status, &reason, &n))
		switch status {
		case "HELD":
			run.Held += n
		case "REJECTED":
			run.Rejected[reason] += n
		}
	}
	rows.Close()
	run.Oversold = f.Count(`
		SELECT count(*) FROM (SELECT n FROM holds, unnest(numbers) n
		WHERE product_id = $1 AND state IN ('ACTIVE', 'CONVERTED') GROUP BY n HAVING count(*) > 1) x`, product)

	// A small sample polled over HTTP says what the database says.
	for i := 0; i < c.Requests && run.Checked < 20; i += c.Requests / 20 {
		if ids[i] == "" {
			continue
		}
		code, body, err := f.Call(http.MethodGet, "/v1/reservations/"+ids[i], tokens[i], nil, "X-Forwarded-For", "10.255.0.1")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, body)
		var status string
		require.NoError(t, f.Pool.QueryRow(ctx, `SELECT status FROM reservation_requests WHERE id = $1`, ids[i]).Scan(&status))
		require.Equal(t, status, body["status"])
		run.Checked++
	}
	return run
}

// busiestStatements reads the n statements that took the most database
// time since the last reset, their text folded to one line of 100
// characters.
func busiestStatements(t proctest.T, f *fleet.Fleet, n int) []Statement {
	rows, err := f.Pool.Query(context.Background(), `
		SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 100), calls, rows, total_exec_time
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT $1`, n)
	require.NoError(t, err)
	defer rows.Close()
	var out []Statement
	for rows.Next() {
		var st Statement
		var ms float64
		require.NoError(t, rows.Scan(&st.Query, &st.Calls, &st.Rows, &ms))
		st.Total = time.Duration(ms * float64(time.Millisecond))
		st.PerRow = st.Total / time.Duration(max(st.Rows, st.Calls, 1))
		out = append(out, st)
	}
	require.NoError(t, rows.Err())
	return out
}

// burstTimeline reads the burst from the database in 250 ms steps.
func burstTimeline(t proctest.T, f *fleet.Fleet, product uuid.UUID, start time.Time) []BurstStep {
	const step = 0.25
	// One pass, grouped by step: a subquery per step took a minute for the
	// synchronous runs' hundreds of steps.
	rows, err := f.Pool.Query(context.Background(), `
		WITH r AS (SELECT floor(extract(epoch FROM created_at - $2::timestamptz) / $3)::int AS ci,
		                  floor(extract(epoch FROM processed_at - $2::timestamptz) / $3)::int AS pi,
		                  extract(epoch FROM processed_at - created_at) AS w
		           FROM reservation_requests WHERE product_id = $1),
		     rec AS (SELECT ci AS i, count(*) AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY w) AS p50, max(w) AS mx
		             FROM r GROUP BY ci),
		     dec AS (SELECT pi AS i, count(*) AS n FROM r WHERE pi IS NOT NULL GROUP BY pi),
		     s AS (SELECT generate_series(0, (SELECT max(pi) FROM r)) AS i)
		SELECT s.i, coalesce(rec.n, 0), coalesce(dec.n, 0), coalesce(rec.p50, 0), coalesce(rec.mx, 0),
		       sum(coalesce(rec.n, 0) - coalesce(dec.n, 0)) OVER (ORDER BY s.i)::int
		FROM s LEFT JOIN rec USING (i) LEFT JOIN dec USING (i) ORDER BY s.i`, product, start, step)
	require.NoError(t, err)
	defer rows.Close()
	var out []BurstStep
	for rows.Next() {
		var i, rec, dec, left int
		var p50, maxWait float64
		require.NoError(t, rows.Scan(&i, &rec, &dec, &p50, &maxWait, &left))
		out = append(out, BurstStep{At: float64(i) * step, Recorded: rec, Decided: dec, QueuedLeft: left,
			WaitP50: time.Duration(p50 * float64(time.Second)), WaitMax: time.Duration(maxWait * float64(time.Second))})
	}
	require.NoError(t, rows.Err())
	return out
}

// addAnswerP99 puts in each step the p99 answer of the requests sent in it.
func addAnswerP99(steps []BurstStep, sent, answers []time.Duration) {
	by := make([][]time.Duration, len(steps))
	for i, at := range sent {
		if k := int(at.Seconds() / 0.25); k < len(steps) {
			by[k] = append(by[k], answers[i])
		}
	}
	for k := range steps {
		slices.Sort(by[k])
		steps[k].AnswerP99 = pct(by[k], 99)
	}
}

// pct is the p-th percentile of sorted durations.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p/100))]
}
