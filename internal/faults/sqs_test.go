package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
	"boxoffice/internal/sqsqueue"
)

// sqsFleet is a fleet on the SQS backend, its queues on a kumo emulator in
// the test process that every process of the fleet talks to.
func sqsFleet(t *testing.T, more proctest.Env) *fleet {
	t.Helper()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	client, err := sqsqueue.NewClient(ctx, srv.URL, "us-east-1")
	require.NoError(t, err)
	mainURL, dlqURL, err := sqsqueue.EnsureQueues(ctx, client, "claims", 5, 30*time.Second)
	require.NoError(t, err)
	env := proctest.Env{"QUEUE_BACKEND": "sqs", "SQS_ENDPOINT": srv.URL, "SQS_QUEUE_URL": mainURL, "SQS_DLQ_URL": dlqURL,
		"SQS_WAIT_TIME": "1s"}
	for k, v := range more {
		env[k] = v
	}
	return newFleet(t, env)
}

// Without a fault no decision waits for a visibility timeout: requests the
// consumer skipped because the publisher had them locked are put back at
// once (about 4 % once waited 30–50 s). With a consumer SIGKILLed mid-batch,
// the other keeps deciding, and the dead one's messages come back after the
// visibility timeout; nothing is lost or decided twice.
func TestSQSConsumerKilled(t *testing.T) {
	f := sqsFleet(t, nil)
	f.serve("serve")
	a, b := f.work("work-a", nil), f.work("work-b", nil)
	f.tenant()
	p := f.product(5000)

	seen := f.load(p, 1500, 16)
	require.Zero(t, seen[500], "no 500s: %v", seen)
	f.waitDecided(60 * time.Second)
	var slowest time.Duration
	require.NoError(t, f.pool.QueryRow(context.Background(),
		`SELECT coalesce(max(processed_at - created_at), '0') FROM reservation_requests`).Scan(&slowest))
	t.Logf("no fault: slowest decision %s", slowest)
	// Generous against a noisy machine, far below a visibility timeout.
	require.Less(t, slowest, 15*time.Second)
	f.requireSound()

	// Slow consumers now, so that the kill lands with messages in flight.
	require.NoError(t, a.Stop(30*time.Second))
	require.NoError(t, b.Stop(30*time.Second))
	// A shorter visibility timeout brings the dead one's messages back
	// sooner; the live consumer keeps extending its own.
	slow := proctest.Env{"BOXOFFICE_CLAIM_RATE_PER_PRODUCT": "100", "SQS_VISIBILITY_TIMEOUT": "10s"}
	c := f.work("work-c", slow)
	f.work("work-d", slow)
	f.load(p, 600, 16)
	require.Positive(t, f.count(`SELECT count(*) FROM reservation_requests WHERE status = 'QUEUED'`))
	killedAt := time.Now()
	c.Kill()
	took := f.waitDecided(90 * time.Second)
	t.Logf("one of two consumers killed: first decision %s after the kill, all decided after %s",
		f.firstDecisionAfter(killedAt), took)
	f.requireSound()
}
