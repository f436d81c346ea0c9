package faults_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/fleet"
	"boxoffice/internal/proctest"
)

// SIGTERM stops a process in order — the API stops accepting and finishes
// its requests, the workers finish their batches, the pool closes last —
// and it exits 0. Nothing accepted is lost: what the stopped worker had not
// decided, the next one does.
func TestGracefulStop(t *testing.T) {
	f := fleet.New(t, fleet.SlowClaims)
	api := f.Serve("serve")
	w := f.Work("work-a", nil)
	f.Tenant()
	p := f.Product(5000)

	seen := f.Load(p, 800, 16)
	require.Zero(t, seen[http.StatusInternalServerError], "no 500s: %v", seen)
	f.RunningClaimOwner(30 * time.Second)
	require.NoError(t, w.Stop(40*time.Second), "work exits 0 on SIGTERM")
	require.Contains(t, w.Logs(), `"stopping workers"`)

	f.Work("work-b", nil)
	f.WaitDecided(60 * time.Second)
	f.RequireSound()
	require.NoError(t, api.Stop(20*time.Second), "serve exits 0 on SIGTERM")
	require.Contains(t, api.Logs(), `"shutting down API"`)
}

// A part that cannot run stops the process with its error: a busy metrics
// port ends `work` at once, naming the variable, instead of a worker that
// runs unobserved.
func TestPartFailureStopsTheProcess(t *testing.T) {
	f := fleet.New(t, nil)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	p := proctest.Start(t, "work", f.With(proctest.Env{"BOXOFFICE_METRICS_ADDR": busy.Addr().String()}), "work")
	require.Eventually(t, p.Exited, 30*time.Second, 50*time.Millisecond)
	require.Error(t, p.Err(), "a non-zero exit status")
	require.Contains(t, p.Logs(), "BOXOFFICE_METRICS_ADDR")
}
