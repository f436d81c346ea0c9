package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"boxoffice/internal/fleet"
	"boxoffice/internal/proctest"
)

// FaultsResult is how long sales took to resume after each fault, measured
// by the fault suite's own scenarios (internal/fleet) on real processes.
type FaultsResult struct {
	River      fleet.WorkerKill   `json:"river"`
	SQS        fleet.ConsumerKill `json:"sqs"`
	Payments   fleet.PaymentKill  `json:"payments"`
	Rolling    fleet.Rolling      `json:"rolling"`
	Leader     fleet.LeaderLoss   `json:"leader"`
	ScaleOut   []fleet.ScaleStep  `json:"scaleOut"`
	Failover   fleet.Failover     `json:"failover"`
	SplitBrain fleet.SplitBrain   `json:"splitBrain"`
	Sweeper    fleet.SweeperKill  `json:"sweeper"`
	Frozen     fleet.Frozen       `json:"frozen"`
	SQSRate    fleet.SQSRate      `json:"sqsRate"`
	Restore    fleet.Restore      `json:"restore"`
	// Fairness with 2 claim workers (fewer than the big sale's products)
	// and with 8 (more).
	Fairness2 fleet.Fairness `json:"fairness2"`
	Fairness8 fleet.Fairness `json:"fairness8"`
	// Fairness8Capped: 8 workers, a tenant's claims capped at 2 at once.
	Fairness8Capped fleet.Fairness `json:"fairness8Capped"`
}

// Faults runs the fault scenarios: a River claim worker SIGKILLed mid-drain
// (another alive, then none), an SQS consumer SIGKILLed mid-batch (and the
// slowest decision without a fault), a worker SIGKILLed while authorizing
// payments. Each owns a PostgreSQL cluster and runs this executable's
// `serve` and `work` as processes.
func Faults(out io.Writer) (*FaultsResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("faults: own executable: %w", err)
	}
	proctest.SetBinary(exe)
	res := &FaultsResult{}
	if res.River, err = asScenario("river worker kill", fleet.RiverWorkerKill); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "faults: River claim worker SIGKILLed mid-drain, another alive: next decision after %s (target ≤ 5 s), queue decided after %s\n",
		round(res.River.ResumeAfterKill), round(res.River.DecidedAfterKill))
	fmt.Fprintf(out, "faults: no worker alive, one started: first decision after %s (target ≤ 5 s), queue decided after %s\n",
		round(res.River.ResumeAfterStart), round(res.River.DecidedAfterStart))
	if res.SQS, err = asScenario("sqs consumer kill", fleet.SQSConsumerKill); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "faults: SQS without a fault: slowest of 1,500 decisions %s (target ≤ 2 s)\n", round(res.SQS.SlowestNoFault))
	fmt.Fprintf(out, "faults: SQS consumer SIGKILLed mid-batch, another alive: next decision after %s, its messages decided after %s (visibility timeout 10 s)\n",
		round(res.SQS.ResumeAfterKill), round(res.SQS.DecidedAfterKill))
	if res.SQSRate, err = asScenario("sqs at 400/s", func(t proctest.T) fleet.SQSRate {
		return fleet.SQSAtRate(t, 400, time.Minute)
	}); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "faults: SQS backend split out of process (emulator, serve, 2 work), %d reservations at %d/s for %s with 30 s holds, no fault: request → decision p50 %s, p99 %s, max %s (target ≤ 2 s)\n",
		res.SQSRate.Requests, res.SQSRate.Rate, round(res.SQSRate.Duration), round(res.SQSRate.Decisions.P50),
		round(res.SQSRate.Decisions.P99), round(res.SQSRate.Decisions.Max))
	if res.Payments, err = asScenario("payment worker kill", fleet.PaymentWorkerKill); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "faults: worker SIGKILLed mid-authorization (3 s provider calls, no webhooks): %d orders confirmed %s after the kill (target ≤ 30 s)\n",
		res.Payments.Orders, round(res.Payments.ConfirmedAfterKill))
	if res.Sweeper, err = asScenario("sweeper kill", fleet.SweeperKilled); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "faults: worker SIGKILLed during a 20 s sweep of a product's expired holds: its statement ended %s after the kill (target a few seconds); a new worker decided the queue in %s\n",
		round(res.Sweeper.Held), round(res.Sweeper.Decided))
	if res.Frozen, err = asScenario("frozen worker", fleet.FrozenWorker); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "faults: the worker draining a product SIGSTOPped for %s: another worker decided %s after the stop (target a few seconds), nothing claimed twice after SIGCONT\n",
		round(res.Frozen.Frozen), round(res.Frozen.ResumedAfter))
	if res.Rolling, err = asScenario("rolling restart", fleet.RollingRestart); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "fleet: rolling restart of 2 API processes (behind a balancer) and 2 workers under load in %s: %d requests recorded meanwhile, %d retried on the other API process, request → decision p50 %s p99 %s max %s, no claim job rescued\n",
		round(res.Rolling.Took), res.Rolling.Recorded, res.Rolling.Retried, round(res.Rolling.DecisionP50),
		round(res.Rolling.DecisionP99), round(res.Rolling.DecisionMax))
	if res.Leader, err = asScenario("river leader loss", fleet.RiverLeaderLoss); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "fleet: River leader SIGKILLed while a waiting room admits: admission paused %s (a step every %s before, %s after)\n",
		round(res.Leader.Paused), round(res.Leader.StepBefore), round(res.Leader.StepAfter))
	if res.ScaleOut, err = asScenario("scale-out", func(t proctest.T) []fleet.ScaleStep { return fleet.ScaleOut(t, 2000) }); err != nil {
		return nil, err
	}
	for _, s := range res.ScaleOut {
		fmt.Fprintf(out, "fleet: %d work processes (2 drains each), 8 products, %d queued requests: decided at %.0f/s, %d processes took a share\n",
			s.Workers, s.Requests, s.DecidedPerSec, s.Sharing)
	}
	if res.Failover, err = asScenario("postgres failover", fleet.PostgresFailover); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "fleet: PostgreSQL primary killed during checkout, synchronous standby promoted after the drill's own %s wait: %d orders confirmed (%d before the kill), %d lost (target 0); %s from the kill to the first accepted write, %s of it after the promotion; orders in flight confirmed %s after the promotion; %d answers 503 meanwhile\n",
		round(res.Failover.PromotionWait), res.Failover.Confirmed, res.Failover.ConfirmedBefore, res.Failover.Lost,
		round(res.Failover.WithoutWriter), round(res.Failover.Resumed), round(res.Failover.Settled), res.Failover.Unavailable)
	if res.SplitBrain, err = asScenario("old primary back as a writer", fleet.OldPrimaryBack); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "fleet: old primary started again as a writer after the failover, serve and a work restarted: purchases paused %s after its start (%d answers 503 WRITER_CONFLICT), %d numbers claimed on both databases and %d rows written to the old one (targets 0); sales resumed %s after fencing it\n",
		round(res.SplitBrain.PausedAfter), res.SplitBrain.Paused, res.SplitBrain.ClaimedOnBoth, res.SplitBrain.WrittenToOld,
		round(res.SplitBrain.ResumedAfter))
	if res.Restore, err = asScenario("restore drill", fleet.RestoreDrill); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "fleet: backup (pg_dump) during a sale, restored into a new database: audit clean, %d orders confirmed in it (%d confirmed after the backup are past its recovery point); %d outbox events replayed; %d ticket mails, %d sent twice with the same Message-ID, at most %d copies (target ≤ 2)\n",
		res.Restore.ConfirmedInBackup, res.Restore.LostSinceBackup, res.Restore.Replayed, res.Restore.Mailed,
		res.Restore.SentTwice, res.Restore.MaxCopies)
	for _, c := range []struct{ workers, tenantClaims int }{{2, 0}, {8, 0}, {8, 2}} {
		r, err := asScenario("tenant fairness", func(t proctest.T) fleet.Fairness {
			return fleet.TenantFairness(t, 500, 3, c.workers, c.tenantClaims)
		})
		if err != nil {
			return nil, err
		}
		switch {
		case c.workers == 2:
			res.Fairness2 = r
		case c.tenantClaims == 0:
			res.Fairness8 = r
		default:
			res.Fairness8Capped = r
		}
		capped := "no cap on a tenant's claims"
		if c.tenantClaims > 0 {
			capped = fmt.Sprintf("BOXOFFICE_TENANT_CLAIMS=%d", c.tenantClaims)
		}
		fmt.Fprintf(out, "fleet: a small sale (500 requests) beside another tenant's big one (60,000 seats in 4 products, shoppers without pause), %d claim workers, %s: request → decision p99 %s alone, %s beside it (%.1f×; target ≤ 2×; median of rounds %s and %s), %d big requests decided meanwhile\n",
			c.workers, capped, round(r.AloneP99), round(r.BesideP99), float64(r.BesideP99)/float64(max(r.AloneP99, 1)),
			rounds(r.AloneRounds), rounds(r.BesideRounds), r.BigDecided)
	}
	return res, nil
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// rounds lists durations to the millisecond: "12/15/14 ms".
func rounds(ds []time.Duration) string {
	ms := make([]string, len(ds))
	for i, d := range ds {
		ms[i] = strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10)
	}
	return strings.Join(ms, "/") + " ms"
}

// asScenario runs a fault scenario outside `go test`: scenarioT stands in
// for the test, a failed check ends the scenario with its messages, and
// everything the scenario started is cleaned up either way.
func asScenario[R any](name string, run func(proctest.T) R) (res R, err error) {
	t := &scenarioT{}
	defer t.cleanup()
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); !ok || !errors.Is(e, errScenarioFailed) {
				panic(p)
			}
			err = fmt.Errorf("faults: %s: %s", name, strings.Join(t.msgs, "; "))
		}
	}()
	res = run(t)
	if t.failed {
		return res, fmt.Errorf("faults: %s: %s", name, strings.Join(t.msgs, "; "))
	}
	return res, nil
}

var errScenarioFailed = errors.New("scenario failed")

// scenarioT implements proctest.T for a benchmark run.
type scenarioT struct {
	failed   bool
	msgs     []string
	cleanups []func()
}

func (t *scenarioT) Helper() {}
func (t *scenarioT) Errorf(format string, args ...any) {
	t.failed = true
	t.msgs = append(t.msgs, fmt.Sprintf(format, args...))
}
func (t *scenarioT) Fatalf(format string, args ...any) { t.Errorf(format, args...); t.FailNow() }
func (t *scenarioT) Fatal(args ...any)                 { t.Errorf("%s", fmt.Sprint(args...)); t.FailNow() }
func (t *scenarioT) FailNow()                          { t.failed = true; panic(errScenarioFailed) }
func (t *scenarioT) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *scenarioT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *scenarioT) Failed() bool                      { return t.failed }

func (t *scenarioT) TempDir() string {
	dir, err := os.MkdirTemp("", "boxoffice-bench-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (t *scenarioT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
