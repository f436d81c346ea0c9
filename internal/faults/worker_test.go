package faults_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// A claim worker SIGKILLed mid-drain once froze its product until River's
// rescuer ran, five minutes later. Now the other worker takes over at once
// (the dead one's liveness lock is free), and with no worker alive a new one
// takes over as it starts.
func TestClaimWorkerKilled(t *testing.T) {
	f := newFleet(t, proctest.Env{
		// Slow claims so that the kill lands mid-drain.
		"BOXOFFICE_CLAIM_BATCH": "20", "BOXOFFICE_CLAIM_RATE_PER_PRODUCT": "300",
	})
	f.serve("serve")
	a, b := f.work("work-a", nil), f.work("work-b", nil)
	f.tenant()
	p := f.product(5000)

	seen := f.load(p, 1200, 16)
	require.Zero(t, seen[500], "no 500s: %v", seen)
	owner := f.runningClaimOwner(30 * time.Second)
	victim, survivor := a, b
	if owner == b.clientID {
		victim, survivor = b, a
	}
	require.Equal(t, victim.clientID, owner)
	killedAt := time.Now()
	victim.Kill()
	took := f.waitDecided(60 * time.Second)
	t.Logf("one of two workers killed mid-drain: first decision %s after the kill, all decided after %s",
		f.firstDecisionAfter(killedAt), took)
	f.requireSound()

	// No worker alive: the survivor dies mid-drain too; a new worker
	// resumes the product when it starts.
	f.load(p, 800, 16)
	require.Equal(t, survivor.clientID, f.runningClaimOwner(30*time.Second))
	survivor.Kill()
	time.Sleep(500 * time.Millisecond)
	started := time.Now()
	f.work("work-c", nil)
	took = f.waitDecided(60 * time.Second)
	t.Logf("no worker alive, a new one started: first decision %s after its start, all decided after %s",
		f.firstDecisionAfter(started), took)
	f.requireSound()
}
