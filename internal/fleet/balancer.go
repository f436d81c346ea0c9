package fleet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// Balancer is the fleet's load balancer: round robin over the API
// processes, and a request whose process refused or dropped it tried on the
// next — as nginx's proxy_next_upstream does in compose.yaml. Safe here
// because every write the fleet sends carries an Idempotency-Key.
type Balancer struct {
	backends []string // base URLs
	next     atomic.Uint64
	client   *http.Client
	// Retried counts requests that a backend failed and another answered.
	Retried atomic.Int64
}

// Balance puts a balancer on the fleet's API address in front of n API
// processes, started on ports of their own (ServeBehind starts them), and
// returns it.
func (f *Fleet) Balance(n int) *Balancer {
	f.t.Helper()
	b := &Balancer{client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	for range n {
		port := proctest.FreePort(f.t)
		f.backendPorts = append(f.backendPorts, port)
		b.backends = append(b.backends, fmt.Sprintf("http://127.0.0.1:%d", port))
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.APIPort))
	require.NoError(f.t, err)
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		b.client.CloseIdleConnections()
	})
	return b
}

// ServeBehind starts (or restarts) API process i behind the balancer and
// waits until it answers.
func (f *Fleet) ServeBehind(name string, i int) *proctest.Process {
	f.t.Helper()
	return f.serveOn(name, f.backendPorts[i])
}

// ServeHTTP forwards the request to the next backend that answers it.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	first := b.next.Add(1)
	var lastErr error
	// Each backend twice: a rolling restart may refuse on one while the
	// other is still starting.
	for try := range 2 * len(b.backends) {
		if try > 0 {
			b.Retried.Add(1)
			time.Sleep(time.Duration(try) * 20 * time.Millisecond)
		}
		target := b.backends[(first+uint64(try))%uint64(len(b.backends))]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := b.client.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	http.Error(w, fmt.Sprintf("no API process answered: %v", lastErr), http.StatusBadGateway)
}
