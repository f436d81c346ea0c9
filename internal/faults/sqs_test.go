package faults_test

import (
	"testing"

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
