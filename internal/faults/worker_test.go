package faults_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/fleet"
)

// A claim worker SIGKILLed mid-drain once froze its product until River's
// rescuer ran, five minutes later. Now the other worker takes over at once
// (the dead one's liveness lock is free), and with no worker alive a new one
// takes over as it starts.
func TestClaimWorkerKilled(t *testing.T) {
	r := fleet.RiverWorkerKill(t)
	t.Logf("one of two workers killed mid-drain: first decision %s after the kill, all decided after %s",
		r.ResumeAfterKill, r.DecidedAfterKill)
	t.Logf("no worker alive, a new one started: first decision %s after its start, all decided after %s",
		r.ResumeAfterStart, r.DecidedAfterStart)
}

// The worker running a long sweep is SIGKILLed: its statement ends on the
// server within seconds (it held the product's claims), and a new worker
// decides what was queued meanwhile.
func TestSweeperKilled(t *testing.T) {
	r := fleet.SweeperKilled(t)
	require.Less(t, r.Held, 10*time.Second, "the killed sweeper's statement ran on")
	t.Logf("the killed sweeper's statement ended %s after the kill; a new worker decided the queue in %s", r.Held, r.Decided)
}

// The worker draining a product is frozen (SIGSTOP) for 30 s: the other
// worker takes the product over within seconds instead of waiting for it,
// and once it wakes up nothing has been claimed twice.
func TestFrozenWorker(t *testing.T) {
	r := fleet.FrozenWorker(t)
	require.Less(t, r.ResumedAfter, 20*time.Second, "the product waited for the frozen worker")
	t.Logf("worker frozen %s: the product resumed %s after the SIGSTOP", r.Frozen, r.ResumedAfter)
}

// The worker making waiting-list offers is SIGKILLed mid-transaction: no
// offer is made twice or lost, and a new worker offers every free number.
func TestWaitlistWorkerKilled(t *testing.T) {
	r := fleet.WaitlistWorkerKilled(t)
	t.Logf("%d offers made once each by a new worker, %s after its start", r.Offers, r.Served)
}
