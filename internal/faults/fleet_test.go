package faults_test

import (
	"testing"

	"boxoffice/internal/fleet"
)

// A deploy restarts every process while a sale runs: two API processes
// behind a balancer and two workers, one after the other, with SIGTERM.
// Nothing is lost or sold twice, every accepted request is decided, and no
// claim job waits for a rescuer.
func TestRollingRestart(t *testing.T) {
	r := fleet.RollingRestart(t)
	t.Logf("restart took %s; %d requests recorded meanwhile, %d retried on the other API process; request → decision p50 %s p99 %s max %s",
		r.Took, r.Recorded, r.Retried, r.DecisionP50, r.DecisionP99, r.DecisionMax)
}
