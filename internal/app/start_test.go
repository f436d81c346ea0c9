package app_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/app"
	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
	"boxoffice/internal/proctest"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// A work process whose database goes away while it starts — before its
// liveness lock, or while River reads its queues' settings — waits for the
// database and then works. It once exited: a PostgreSQL restart caught a
// work process starting, and the sale's requests stayed queued with
// nothing left to claim them.
func TestWorkersWaitForTheDatabaseToStart(t *testing.T) {
	t.Parallel()
	server, err := url.Parse(dbtest.URL(t))
	require.NoError(t, err)
	gate := proctest.NewGate(t, server.Host)
	env := testfix.New(t, testfix.Options{Through: gate.Addr()})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	r := env.Reserve(t, p, "ann", reservation.Params{Quantity: 2})

	gate.Cut()
	// River's own start fails, as a database that cannot be reached...
	err = env.River.Start(context.Background())
	require.Error(t, err)
	require.True(t, db.IsUnavailable(err), "River's start failing for the database is one to wait out: %v", err)

	// ...and the work process waits for it instead of exiting.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, env.App.WorkersPart()) }()
	select {
	case err := <-done:
		t.Fatalf("the workers stopped while the database was away: %v", err)
	case <-time.After(2 * time.Second):
	}

	gate.Open()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, reservation.StatusHeld, env.Get(c, p, r.ID).Status)
	}, 30*time.Second, 100*time.Millisecond, "the request queued before is claimed once the database is back")
	cancel()
	require.NoError(t, <-done)
}
