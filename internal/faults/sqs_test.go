package faults_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/fleet"
)

// Without a fault no decision waits for a visibility timeout: requests the
// consumer skipped because the publisher had them locked are put back at
// once (about 4 % once waited 30–50 s). With a consumer SIGKILLed mid-batch,
// the other keeps deciding, and the dead one's messages come back after the
// visibility timeout; nothing is lost or decided twice.
func TestSQSConsumerKilled(t *testing.T) {
	r := fleet.SQSConsumerKill(t)
	t.Logf("no fault: slowest decision %s", r.SlowestNoFault)
	t.Logf("one of two consumers killed: first decision %s after the kill, all decided after %s",
		r.ResumeAfterKill, r.DecidedAfterKill)
}

// The SQS backend split as in production (the emulator, serve and two work
// processes apart) at a steady rate with no fault, long enough for the
// first holds to expire and be swept while claims go on: every request is
// decided within seconds, never after a visibility timeout (the sweeper
// and the consumers' claims once deadlocked there, and decisions fell
// behind by seconds).
func TestSQSSplitAtRate(t *testing.T) {
	r := fleet.SQSAtRate(t, 200, 40*time.Second)
	require.Less(t, r.Decisions.P99, 5*time.Second, "request → decision p99")
	t.Logf("%d requests at %d/s for %s: request → decision p50 %s, p99 %s, max %s; %d answers 503",
		r.Requests, r.Rate, r.Duration, r.Decisions.P50, r.Decisions.P99, r.Decisions.Max, r.Answered503)
}
