package faults_test

import (
	"testing"

	"github.com/stretchr/testify/require"

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

// River's leader runs the periodic jobs. Killed during an on-sale, another
// process takes over and admission resumes its pace.
func TestRiverLeaderLoss(t *testing.T) {
	r := fleet.RiverLeaderLoss(t)
	t.Logf("admission paused %s after the leader was killed (steps every %s before, every %s after)",
		r.Paused, r.StepBefore, r.StepAfter)
}

// More work processes share the products on sale: with 8 products queued,
// 1, 2 and 4 workers each decide everything, and every process takes a
// share. (Two cores cannot show a speed-up: see docs/reliability.md.)
func TestScaleOut(t *testing.T) {
	for _, s := range fleet.ScaleOut(t, 150) {
		t.Logf("%d workers: %d requests on 8 products decided at %.0f/s; %d of them ran claim jobs",
			s.Workers, s.Requests, s.DecidedPerSec, s.Sharing)
		require.Equal(t, s.Workers, s.Sharing, "every worker took a share")
	}
}

// The primary dies with orders in flight; the synchronous standby is
// promoted and BoxOffice finds it by itself. No order a shopper saw
// confirmed is lost, nothing is sold twice.
func TestPostgresFailover(t *testing.T) {
	r := fleet.PostgresFailover(t)
	t.Logf("%d orders confirmed (%d before the kill), %d lost; %s without a writer (the drill's own %s wait included), sales resumed %s after the promotion, every order in flight confirmed %s after it; %d answers 503",
		r.Confirmed, r.ConfirmedBefore, r.Lost, r.WithoutWriter, r.PromotionWait, r.Resumed, r.Settled, r.Unavailable)
}

// After the failover the old primary comes back as a writer and serve and
// a work restart: purchases pause (503 WRITER_CONFLICT) and nothing is
// written to the old primary, so no number is sold on both; once it is
// fenced, sales resume.
func TestOldPrimaryBackAsWriter(t *testing.T) {
	r := fleet.OldPrimaryBack(t)
	t.Logf("paused %s after the old primary started (%d answers WRITER_CONFLICT); %d numbers claimed on both, %d rows written to the old primary; sales resumed %s after fencing it",
		r.PausedAfter, r.Paused, r.ClaimedOnBoth, r.WrittenToOld, r.ResumedAfter)
}

// A backup taken during a sale restores into a new database that passes
// the audit, and replaying its outbox sends no ticket mail more than once
// more, with the same Message-ID.
func TestRestoreDrill(t *testing.T) {
	r := fleet.RestoreDrill(t)
	t.Logf("%d orders confirmed in the backup, %d confirmed after it (the recovery point); %d outbox events replayed; %d ticket mails, %d sent twice (same Message-ID), at most %d copies",
		r.ConfirmedInBackup, r.LostSinceBackup, r.Replayed, r.Mailed, r.SentTwice, r.MaxCopies)
}

// One tenant's big on-sale cannot starve another tenant's small sale: the
// small one is served while the big one runs.
func TestTenantFairness(t *testing.T) {
	// Two workers for the big sale's four products: only yielding lets the
	// small sale in before the big one ends.
	r := fleet.TenantFairness(t, 100, 1, 2, 0)
	t.Logf("small sale alone: p99 %s max %s; beside the big one: p99 %s max %s (%d big requests decided meanwhile)",
		r.AloneP99, r.AloneMax, r.BesideP99, r.BesideMax, r.BigDecided)
}
