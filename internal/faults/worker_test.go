package faults_test

import (
	"testing"

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
