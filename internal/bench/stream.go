package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// StreamConfig is the live-availability benchmark.
type StreamConfig struct {
	Subscribers int           `json:"subscribers"`
	Baseline    int           `json:"baseline" doc:"subscribers of the baseline run"`
	Commits     int           `json:"commits" doc:"claim commits while the subscribers listen"`
	Every       time.Duration `json:"every"`
}

// StreamRun is one run's figures.
type StreamRun struct {
	Subscribers     int           `json:"subscribers"`
	Connected       time.Duration `json:"connected" doc:"time until every subscriber had its snapshot"`
	Samples         int           `json:"samples"`
	P50, P99, Max   time.Duration `json:"-"`
	P50ms, P99ms    float64
	MaxMs           float64
	Missed          int     `json:"missed" doc:"commit × subscriber pairs with no delta at or after the commit's version"`
	BytesPerSub     float64 `json:"serverBytesPerSubscriber"`
	QueriesPerSec   float64 `json:"streamQueriesPerSec"`
	ClaimCommitsSec float64 `json:"claimCommitsPerSec"`
}

// StreamResult compares a crowd with the baseline.
type StreamResult struct {
	Crowd    StreamRun `json:"crowd"`
	Baseline StreamRun `json:"baseline"`
}

// Stream measures live availability at scale: Subscribers streams of one
// product on one API process, opened by a separate client process (this
// executable's `bench stream-client`), while claims commit every Every. It
// reports the delay from each claim's commit to the delta reaching each
// subscriber, the API process's memory per subscriber, and the database
// queries per second the streams cost — beside a baseline run with few
// subscribers, which must cost the same queries.
func Stream(ctx context.Context, pool *pgxpool.Pool, c StreamConfig, out io.Writer) (*StreamResult, error) {
	fmt.Fprintf(out, "stream: availability pushed to %d subscribers of one product on one process (client in another process), a claim commit every %s\n",
		c.Subscribers, c.Every)
	res := &StreamResult{}
	var err error
	if res.Baseline, err = streamRun(ctx, pool, c, c.Baseline); err != nil {
		return nil, err
	}
	if res.Crowd, err = streamRun(ctx, pool, c, c.Subscribers); err != nil {
		return nil, err
	}
	for _, r := range []StreamRun{res.Baseline, res.Crowd} {
		fmt.Fprintf(out, "  %6d subscribers: connected in %6.2fs; commit→delta p50 %5.0fms p99 %5.0fms max %5.0fms (%d samples, %d missed); %5.1f KiB server memory each; stream queries %.2f/s\n",
			r.Subscribers, r.Connected.Seconds(), r.P50ms, r.P99ms, r.MaxMs, r.Samples, r.Missed, r.BytesPerSub/1024, r.QueriesPerSec)
	}
	fmt.Fprintf(out, "  queries per second, crowd ÷ baseline: %.2fx (subscribers ×%d)\n",
		res.Crowd.QueriesPerSec/max(res.Baseline.QueriesPerSec, 1e-9), c.Subscribers/max(c.Baseline, 1))
	return res, nil
}

func streamRun(ctx context.Context, pool *pgxpool.Pool, c StreamConfig, subscribers int) (StreamRun, error) {
	r := StreamRun{Subscribers: subscribers}
	logger := slog.New(slog.DiscardHandler)
	t, err := newTenant(ctx, pool, "stream-")
	if err != nil {
		return r, err
	}
	p, err := newProducts(pool).Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "s-" + uuid.NewString()[:8],
		Name: "Stream bench", Kind: product.KindNumbered, Capacity: 60_000, PriceCents: 100, Currency: "EUR"})
	if err != nil {
		return r, err
	}
	a, err := build(ctx, pool, logger, app.Options{}, nil)
	if err != nil {
		return r, err
	}
	srv, base, stop, err := serve(ctx, a)
	if err != nil {
		return r, err
	}
	defer stop()

	before := heapBytes()
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	cmd := exec.CommandContext(ctx, exe, "bench", "stream-client", "-addr", strings.TrimPrefix(base, "http://"),
		"-path", "/v1/products/"+p.ID.String()+"/availability/stream", "-n", strconv.Itoa(subscribers))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewReader(stdout)
	if line, err := lines.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		return r, fmt.Errorf("stream client: %q %w", line, err)
	}
	r.Connected = time.Since(start)
	r.BytesPerSub = float64(heapBytes()-before) / float64(subscribers)

	// Claims commit while everyone listens; each commit's version and time.
	type commit struct {
		version int64
		at      time.Time
	}
	var commits []commit
	q0, t0 := srv.Live().Queries(), time.Now()
	for i := range c.Commits {
		reqs := make([]reservation.Queued, 50)
		for j := range reqs {
			reqs[j] = reservation.Queued{BuyerID: fmt.Sprintf("c%d-%d", i, j), Quantity: 1, Mode: reservation.ModeRandom}
		}
		if _, err := reservation.ImportQueued(ctx, pool, t.ID, p.ID, reqs); err != nil {
			return r, err
		}
		if _, err := a.Claimer.ClaimBatch(ctx, p.ID, len(reqs)); err != nil {
			return r, err
		}
		at := time.Now()
		snap, _, err := inventory.Changed(ctx, pool, p.ID, -1)
		if err != nil {
			return r, err
		}
		commits = append(commits, commit{snap.Version, at})
		time.Sleep(c.Every)
	}
	time.Sleep(3 * time.Second) // the last deltas arrive
	elapsed := time.Since(t0)
	r.QueriesPerSec = float64(srv.Live().Queries()-q0) / elapsed.Seconds()
	r.ClaimCommitsSec = float64(c.Commits) / elapsed.Seconds()

	// The client writes, per event id, when each subscriber received it.
	_ = stdin.Close()
	var got map[int64][]int64
	if err := json.NewDecoder(lines).Decode(&got); err != nil {
		return r, fmt.Errorf("stream client result: %w", err)
	}
	ids := make([]int64, 0, len(got))
	for id := range got {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var delays []time.Duration
	for _, cm := range commits {
		i, _ := slices.BinarySearch(ids, cm.version)
		if i == len(ids) {
			r.Missed += subscribers
			continue
		}
		for _, ns := range got[ids[i]] {
			delays = append(delays, time.Unix(0, ns).Sub(cm.at))
		}
		r.Missed += subscribers - len(got[ids[i]])
	}
	if len(delays) == 0 {
		return r, errors.New("stream bench: no delta reached a subscriber")
	}
	slices.Sort(delays)
	r.Samples = len(delays)
	r.P50, r.P99, r.Max = delays[len(delays)/2], delays[len(delays)*99/100], delays[len(delays)-1]
	r.P50ms, r.P99ms, r.MaxMs = ms(r.P50), ms(r.P99), ms(r.Max)
	return r, nil
}

// heapBytes is the live heap and goroutine stacks after a collection: what
// the open streams hold in this process.
func heapBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// StreamClient is the subscribers' process: it opens n streams to addr,
// prints "ready" once each has its snapshot, records when each delta
// arrives, and when its stdin closes prints, as JSON, each event id's
// receipt times (Unix nanoseconds) across subscribers.
func StreamClient(addr, path string, n int, stdin io.Reader, stdout io.Writer) error {
	var mu sync.Mutex
	got := map[int64][]int64{}
	ready := make(chan error, n)
	done := make(chan struct{})
	var conns []net.Conn
	var connMu sync.Mutex
	for i := range n {
		go func() {
			conn, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err != nil {
				ready <- err
				return
			}
			connMu.Lock()
			conns = append(conns, conn)
			connMu.Unlock()
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", path, addr)
			br := bufio.NewReaderSize(conn, 4096)
			first := true
			var id int64
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					if first {
						ready <- fmt.Errorf("subscriber %d: %w", i, err)
					}
					return
				}
				switch {
				case strings.HasPrefix(line, "id: "):
					id, _ = strconv.ParseInt(strings.TrimSpace(line[4:]), 10, 64)
				case strings.HasPrefix(line, "event: snapshot"):
					if first {
						first = false
						ready <- nil
					}
				case strings.HasPrefix(line, "event: delta"):
					now := time.Now().UnixNano()
					mu.Lock()
					got[id] = append(got[id], now)
					mu.Unlock()
				}
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	for range n {
		if err := <-ready; err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, stdin) // until the parent closes it
	close(done)
	connMu.Lock()
	for _, c := range conns {
		_ = c.Close()
	}
	connMu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	return json.NewEncoder(stdout).Encode(got)
}
