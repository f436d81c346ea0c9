package faults_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/fleet"
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
