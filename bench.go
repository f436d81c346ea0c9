package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5"

	"boxoffice/internal/bench"
	"boxoffice/internal/db"
	"boxoffice/migrations"
)

// runBench runs a benchmark scenario in a private schema of the bench
// database (BENCH_DATABASE_URL, default the local server's boxoffice_bench),
// prints the figures and writes them as JSON under bench/out/.
func runBench(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "claim" {
		return errors.New("usage: boxoffice bench claim [-seats N] [-requests N] [-batch N] [-workers N] [-baseline=true]")
	}
	fs := flag.NewFlagSet("bench claim", flag.ContinueOnError)
	c := bench.ClaimConfig{}
	fs.IntVar(&c.Seats, "seats", 60_000, "seats of the product (multiple of 3,000)")
	fs.IntVar(&c.Requests, "requests", 30_000, "queued requests of 2 seats")
	fs.IntVar(&c.BatchSize, "batch", 1000, "claim batch size")
	fs.IntVar(&c.Workers, "workers", 8, "River claim workers")
	fs.BoolVar(&c.Baseline, "baseline", true, "also run with batch size 1")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if c.Seats%3000 != 0 || c.Seats <= 0 {
		return errors.New("-seats must be a positive multiple of 3,000")
	}

	url := os.Getenv("BENCH_DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/boxoffice_bench?sslmode=disable"
	}
	if err := db.EnsureDatabase(ctx, url); err != nil {
		return err
	}
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	schema := "bench_" + hex.EncodeToString(buf)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return err
	}
	if os.Getenv("BENCH_KEEP") == "" { // BENCH_KEEP=1 keeps the schema for inspection
		defer admin.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE") //nolint:errcheck // best effort
	} else {
		fmt.Println("keeping schema", schema)
	}

	pool, err := db.Open(ctx, url, db.PoolOptions{MaxConns: int32(c.Workers + 8), Schema: schema})
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := migrations.New(pool, migrations.Options{})
	if err != nil {
		return err
	}
	if err := m.Up(ctx); err != nil {
		return err
	}
	_ = m.Close()

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
	fmt.Printf("machine: %d cores, %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	res, err := bench.Claim(ctx, pool, schema, c, os.Stdout)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join("bench", "out"), 0o755); err != nil {
		return err
	}
	path := filepath.Join("bench", "out", "claim-"+time.Now().UTC().Format("20060102T150405Z")+".json")
	b, _ := json.MarshalIndent(map[string]any{"scenario": "claim", "config": c, "cores": runtime.NumCPU(), "result": res}, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	fmt.Println("figures written to", path)
	if res.Batched.Violations > 0 || (res.Unbatched != nil && res.Unbatched.Violations > 0) {
		return errors.New("invariant violations during the benchmark")
	}
	return nil
}
