package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/fleet"
)

// The report answers questions — each figure beside its baseline with the
// ratio, latency by concurrency, the burst over time, the trend — and no
// longer dumps every JSON field as a bar.
func TestHTMLReport(t *testing.T) {
	figures := map[string]any{
		"claim": map[string]any{"config": ClaimConfig{Requests: 10}, "result": &ClaimResult{
			Batched: ClaimRun{NumbersPerSec: 40000}, Unbatched: &ClaimRun{NumbersPerSec: 600}}},
		"accept": map[string]any{"result": []HTTPAcceptStep{
			{Mode: "batched", Concurrency: 16, PerSec: 5000, P50: 3 * time.Millisecond, P99: 6 * time.Millisecond},
			{Mode: "batched", Concurrency: 64, PerSec: 10000, P50: 6 * time.Millisecond, P99: 14 * time.Millisecond},
			{Mode: "one-tx", Concurrency: 16, PerSec: 1200, P50: 9 * time.Millisecond, P99: 50 * time.Millisecond},
			{Mode: "one-tx", Concurrency: 64, PerSec: 700, P50: 50 * time.Millisecond, P99: 400 * time.Millisecond}}},
		"burst": map[string]any{"result": &BurstResult{Runs: []BurstRun{
			{Mode: "pipeline", Ask: "numbers", DecidedPerSec: 9500, AnswerP99: 80 * time.Millisecond,
				Timeline: []BurstStep{{At: 0, Recorded: 2000, Decided: 1800}, {At: 0.25, Recorded: 2400, Decided: 2500}}},
			{Mode: "pipeline", Ask: "quantity"},
			{Mode: "synchronous", Ask: "numbers", DecidedPerSec: 550, AnswerP99: 900 * time.Millisecond},
		}}},
		"faults": map[string]any{"result": &FaultsResult{
			Fairness2: fleet.Fairness{AloneP99: 20 * time.Millisecond, BesideP99: 30 * time.Millisecond}}},
	}
	history := []Run{
		{At: time.Now().Add(-time.Hour), Figures: generic(figures)},
		{At: time.Now(), Figures: generic(figures)},
	}
	page := HTMLReport("test", "summary", figures, history)
	for _, want := range []string{"Claims: batched against one request per transaction — 66.67× better", "40,000 numbers/s",
		"Accepts over HTTP: micro-batched against one transaction each (best of each) — 8.33× better",
		"Burst (random numbers): the pipeline against claims in the request — 17.27× better",
		"Burst (random numbers): answer p99 — 11.25× better (lower is better)",
		"big sale (2 claim workers; target: at most 2× worse) — 1.50× worse (lower is better)",
		"Answer latency (p50, p99) at 16, 64 connections", "Pipeline, numbers: requests per 250 ms",
		"Trend over the last runs", "<polyline"} {
		require.Contains(t, page, want)
	}
	require.NotContains(t, page, "8 claim workers", "a scenario that did not run is left out")
	require.NotContains(t, page, "config.Requests", "no raw field dump")
	require.False(t, strings.Contains(page, "<script"), "self-contained, no scripts")
}
