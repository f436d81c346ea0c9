//go:build dev

// The benchmarks are built only with the dev tag (`make bench` sets it): they
// link the SQS emulator, the fault harness and test helpers.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sivchari/kumo"

	"boxoffice/internal/bench"
	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
)

const benchUsage = `usage: boxoffice bench claim|sqs-accept|checkout|room|accept|million|onsale|raffle|stream|store|burst|faults|all [flags]

  claim       drain queued requests: River batched vs batch size 1, and through SQS
  sqs-accept  accept with the SQS backend: SendMessageBatch vs one SendMessage per request
  checkout    orders confirmed per second through the payment simulator at 2 s per call
  room        waiting-room joins and status polls per second, polls against a database-backed baseline
  accept      POST reservations over HTTP at 16/64/256 connections: micro-batched vs one transaction each
  million     the same claims on products of 10,000, 1,000,000 and 10,000,000 numbers; the cache of large ones
  onsale      the stadium on-sale end to end (waiting room, reservations, payments), oversold checked in the database
  raffle      a 10,000,000-number raffle's on-sale: the same journey, buyers asking numbers of their choosing
  stream      live availability (server-sent events) to 10,000 subscribers of one product on one process: commit-to-delta delay, memory, queries
  store       the store in headless Chromium: home page bytes, the 60,000-seat plan's first draw, live deltas to the map
  burst       a real opening: 30,000 reservations from 256 connections and distinct buyers against serve and work
              processes, accepts and claims at once, against a synchronous baseline (claim in the request)
  faults      resume times after SIGKILLs of a claim worker, an SQS consumer and a payment worker; a rolling restart of a
              fleet behind a balancer, River leader loss, scale-out to 1/2/4 workers (real processes, own PostgreSQL)
  all         all of them (what make bench runs)
`

// runBench runs benchmark scenarios in a private schema of the bench
// database (BENCH_DATABASE_URL, default the local server's boxoffice_bench),
// prints the figures and writes them as JSON under bench/out/.
func runBench(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errUsage("%s", benchUsage)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Print(benchUsage)
		return nil
	}
	scenario := args[0]
	if scenario == "stream-client" {
		return runStreamClient(args[1:])
	}
	if scenario != "store" && scenario != "stream" && scenario != "claim" && scenario != "sqs-accept" && scenario != "checkout" && scenario != "room" && scenario != "accept" && scenario != "million" && scenario != "onsale" && scenario != "raffle" && scenario != "faults" && scenario != "burst" && scenario != "all" {
		return errUsage("%s", benchUsage)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	c := bench.ClaimConfig{}
	fs.IntVar(&c.Seats, "seats", 60_000, "claim: seats of the product (multiple of 3,000)")
	fs.IntVar(&c.Requests, "requests", 30_000, "claim: queued requests of 2 seats")
	fs.IntVar(&c.BatchSize, "batch", 1000, "claim: claim batch size")
	fs.IntVar(&c.Workers, "workers", 8, "claim: workers")
	fs.BoolVar(&c.Baseline, "baseline", true, "claim: also run with batch size 1")
	withSQS := fs.Bool("sqs", true, "claim: also drain through SQS (kumo in-process)")
	a := bench.AcceptConfig{}
	fs.IntVar(&a.Requests, "accepts", 5000, "sqs-accept: requests per run")
	fs.IntVar(&a.Concurrency, "concurrency", 64, "sqs-accept: concurrent callers")
	co := bench.CheckoutConfig{}
	fs.IntVar(&co.Orders, "orders", 400, "checkout: orders")
	fs.DurationVar(&co.Latency, "psp-latency", 2*time.Second, "checkout: simulator latency per call")
	fs.IntVar(&co.PaymentWorkers, "payment-workers", 200, "checkout: provider calls in flight at most")
	rc := bench.RoomConfig{}
	fs.IntVar(&rc.Joins, "joins", 20_000, "room: buyers joining before opening")
	fs.IntVar(&rc.Concurrency, "room-concurrency", 256, "room: concurrent callers (a spike comes from many clients)")
	fs.DurationVar(&rc.PollFor, "poll-for", 3*time.Second, "room: length of each poll run")
	// The batched mode runs with the service's own batching defaults.
	defaults := config.Default()
	// The services the scenarios run in process collect as serve and work do.
	tuneGC(defaults.GCPercent)
	ac := bench.HTTPAcceptConfig{Concurrency: []int{16, 64, 256}, Linger: defaults.AcceptLinger,
		Transactions: defaults.AcceptTransactions}
	fs.DurationVar(&ac.Duration, "accept-for", 3*time.Second, "accept: length of each step")
	mc := bench.MillionConfig{ReadFor: 2 * time.Second}
	fs.IntVar(&mc.Rounds, "million-rounds", 3, "million: rounds of every claim on every size")
	fs.IntVar(&mc.Cached, "million-cached", 10, "million: 10,000,000-number products the API caches")
	oc := bench.OnsaleConfig{PreOpenShare: 0.3, PSPLatency: 2 * time.Second, Deadline: 5 * time.Minute}
	fs.IntVar(&oc.Seats, "onsale-seats", 6000, "onsale: seats (multiple of 3,000; the full stadium is 60000)")
	fs.IntVar(&oc.Buyers, "onsale-buyers", 20_000, "onsale: buyers (the full stadium: 200000)")
	fs.DurationVar(&oc.JoinOver, "onsale-over", 20*time.Second, "onsale: arrivals spread over (the full stadium: 60s)")
	fs.IntVar(&oc.ActiveShoppers, "onsale-l", 1000, "onsale: waiting room L")
	fs.IntVar(&oc.ShoppingSecs, "onsale-w", 5, "onsale: waiting room W (seconds)")
	fs.IntVar(&oc.PaymentWorkers, "onsale-payment-workers", 500, "onsale: provider calls in flight at most")
	// The raffle's on-sale: the same journey, its buyers asking numbers of
	// their choosing; full size by flags (-raffle-buyers 200000
	// -raffle-over 60s -raffle-l 20000).
	ra := bench.OnsaleConfig{PreOpenShare: 0.3, PSPLatency: 2 * time.Second, PayShare: 0.1, ShoppingSecs: 5}
	fs.IntVar(&ra.Raffle, "raffle-numbers", 10_000_000, "raffle: numbers")
	fs.IntVar(&ra.Buyers, "raffle-buyers", 20_000, "raffle: buyers (full size: 200000)")
	fs.DurationVar(&ra.JoinOver, "raffle-over", 20*time.Second, "raffle: arrivals spread over (full size: 60s)")
	fs.IntVar(&ra.ActiveShoppers, "raffle-l", 2000, "raffle: waiting room L (full size: 20000)")
	fs.IntVar(&ra.PaymentWorkers, "raffle-payment-workers", 500, "raffle: provider calls in flight at most")
	fs.DurationVar(&ra.Deadline, "raffle-deadline", 10*time.Minute, "raffle: stop after")
	sc := bench.StreamConfig{Baseline: 100, Commits: 20}
	fs.IntVar(&sc.Subscribers, "stream-subscribers", 10_000, "stream: subscribers of one product (opened by a client process)")
	fs.DurationVar(&sc.Every, "stream-every", 500*time.Millisecond, "stream: time between claim commits")
	bc := bench.BurstConfig{}
	fs.IntVar(&bc.Requests, "burst-requests", 30_000, "burst: reservation requests")
	fs.IntVar(&bc.Conns, "burst-conns", 256, "burst: connections")
	fs.StringVar(&bc.Profiles, "burst-profiles", "", "burst: a folder where serve and work write CPU profiles")
	fs.IntVar(&bc.First, "burst-first", 10_000, "burst: requests of the processes' first burst, reported apart before the measured ones (0: none)")
	fs.Func("burst-modes", "burst: the designs to run, comma-separated (default pipeline,synchronous)", func(v string) error {
		bc.Modes = strings.Split(v, ",")
		for _, m := range bc.Modes {
			if m != "pipeline" && m != "synchronous" {
				return fmt.Errorf("unknown burst mode %q", m)
			}
		}
		return nil
	})
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := parseFlags(fs, benchUsage, args[1:]); err != nil {
		return err
	}
	if c.Seats%3000 != 0 || c.Seats <= 0 {
		return errors.New("-seats must be a positive multiple of 3,000")
	}

	pool, cleanup, err := benchSchema(ctx, min(max(c.Workers+a.Concurrency, rc.Concurrency)+16, 80))
	if err != nil {
		return err
	}
	defer cleanup()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// The SQS emulator runs in this process, as in development and tests.
	emulator := kumo.NewServer()
	defer emulator.Close()
	if *withSQS {
		c.SQSEndpoint = emulator.URL
	}
	a.SQSEndpoint = emulator.URL

	var summary strings.Builder
	out := io.MultiWriter(os.Stdout, &summary)
	fmt.Fprintf(out, "machine: %d cores, %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	figures := map[string]any{"cores": runtime.NumCPU(), "go": runtime.Version(), "at": time.Now().UTC()}
	var violations int
	if scenario == "claim" || scenario == "all" {
		res, err := bench.Claim(ctx, pool, c, out)
		if err != nil {
			return err
		}
		figures["claim"] = map[string]any{"config": c, "result": res}
		violations += res.Batched.Violations
		if res.Unbatched != nil {
			violations += res.Unbatched.Violations
		}
		if res.SQS != nil {
			violations += res.SQS.Violations
		}
	}
	if scenario == "sqs-accept" || scenario == "all" {
		res, err := bench.SQSAccept(ctx, pool, a, out)
		if err != nil {
			return err
		}
		figures["sqsAccept"] = map[string]any{"config": a, "result": res}
	}

	if scenario == "checkout" || scenario == "all" {
		res, err := bench.Checkout(ctx, pool, co, out)
		if err != nil {
			return err
		}
		figures["checkout"] = map[string]any{"config": co, "result": res}
	}

	if scenario == "accept" || scenario == "all" {
		res, err := bench.HTTPAccept(ctx, pool, ac, out)
		if err != nil {
			return err
		}
		figures["accept"] = map[string]any{"config": ac, "result": res}
	}
	if scenario == "million" || scenario == "all" {
		res, err := bench.Million(ctx, pool, mc, out)
		if err != nil {
			return err
		}
		figures["million"] = map[string]any{"config": mc, "result": res}
		violations += res.Violations
	}
	if scenario == "onsale" || scenario == "all" {
		res, err := bench.Onsale(ctx, pool, oc, out)
		if err != nil {
			return err
		}
		figures["onsale"] = map[string]any{"config": oc, "result": res}
		violations += res.Violations + int(res.Oversold)
	}
	if scenario == "raffle" || scenario == "all" {
		res, err := bench.Onsale(ctx, pool, ra, out)
		if err != nil {
			return err
		}
		figures["raffle"] = map[string]any{"config": ra, "result": res}
		violations += res.Violations + int(res.Oversold)
	}
	if scenario == "room" || scenario == "all" {
		res, err := bench.Room(ctx, pool, rc, out)
		if err != nil {
			return err
		}
		figures["room"] = map[string]any{"config": rc, "result": res}
	}

	if scenario == "stream" || scenario == "all" {
		res, err := bench.Stream(ctx, pool, sc, out)
		if err != nil {
			return err
		}
		figures["stream"] = map[string]any{"config": sc, "result": res}
	}

	if scenario == "store" || scenario == "all" {
		res, err := bench.Store(ctx, pool, 60_000, out)
		if err != nil {
			return err
		}
		figures["store"] = map[string]any{"result": res}
	}

	if scenario == "burst" || scenario == "all" {
		res, err := bench.Burst(out, bc)
		if err != nil {
			return err
		}
		figures["burst"] = map[string]any{"config": bc, "result": res}
	}

	if scenario == "faults" || scenario == "all" {
		res, err := bench.Faults(out)
		if err != nil {
			return err
		}
		figures["faults"] = map[string]any{"result": res}
	}

	// Reports for whoever reads the checkout, not secrets.
	if err := os.MkdirAll(filepath.Join("bench", "out"), 0o755); err != nil { //nolint:gosec // G301: a report folder
		return err
	}
	stamp := scenario + "-" + time.Now().UTC().Format("20060102T150405Z")
	path := filepath.Join("bench", "out", stamp+".json")
	b, _ := json.MarshalIndent(figures, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil { //nolint:gosec // G306: a report
		return err
	}
	report := filepath.Join("bench", "out", stamp+".html")
	history := bench.History(filepath.Join("bench", "out"), 20)                                                                                     // this run's JSON is the last
	if err := os.WriteFile(report, []byte(bench.HTMLReport("BoxOffice benchmark "+stamp, summary.String(), figures, history)), 0o644); err != nil { //nolint:gosec // G306: a report
		return err
	}
	fmt.Println("figures written to", path, "and", report)
	if violations > 0 {
		return errors.New("invariant violations during the benchmark")
	}
	return nil
}

// benchSchema creates a private, migrated schema in the bench database
// (created when missing) and returns a pool on it; cleanup drops it unless
// BENCH_KEEP is set.
func benchSchema(ctx context.Context, maxConns int) (*pgxpool.Pool, func(), error) {
	bc := config.BenchFromEnv()
	if err := db.EnsureDatabase(ctx, bc.DatabaseURL); err != nil {
		return nil, nil, fmt.Errorf("BENCH_DATABASE_URL %s: %w", db.Redact(bc.DatabaseURL), err)
	}
	s, err := dbtest.Create(ctx, bc.DatabaseURL, "bench_", int32(maxConns))
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		if bc.Keep {
			s.Pool.Close()
			fmt.Println("kept schema", s.Name)
			return
		}
		_ = s.Drop(context.WithoutCancel(ctx))
	}
	return s.Pool, cleanup, nil
}

// runStreamClient is the stream benchmark's client process (not for people:
// the stream scenario starts it).
func runStreamClient(args []string) error {
	fs := flag.NewFlagSet("stream-client", flag.ContinueOnError)
	addr := fs.String("addr", "", "API address")
	path := fs.String("path", "", "stream path")
	n := fs.Int("n", 1, "subscribers")
	if err := parseFlags(fs, "usage: boxoffice bench stream-client (started by the stream scenario)\n", args); err != nil {
		return err
	}
	return bench.StreamClient(*addr, *path, *n, os.Stdin, os.Stdout)
}
