package jobs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

func TestMain(m *testing.M) { testfix.VerifyNoLeaks(m) }

// Admission runs every second outside River's queues: while the sweeper and
// the auditor are stuck (both maintenance slots busy), the waiting room
// still admits at its rate. On one shared queue it stalled behind them.
func TestAdmissionKeepsPaceDuringSlowMaintenance(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var stuck atomic.Int32
	env := testfix.New(t, testfix.Options{Work: true, SweepInterval: time.Second, AuditInterval: time.Second,
		BeforeJob: func(ctx context.Context, kind string) {
			if kind == "relay_outbox" {
				return
			}
			stuck.Add(1)
			defer stuck.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}})
	// Registered after the workers' own cleanup, so it runs first.
	t.Cleanup(func() { close(release) })
	p := env.Product(t, testfix.ProductOpts{Capacity: 10_000, OnSaleAt: time.Now().Add(time.Hour),
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 1000, ShoppingSeconds: 100}})
	for i := range 200 {
		_, _, err := env.Rooms.Join(context.Background(), p.TenantID, p.ID, fmt.Sprintf("b%d", i))
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, stuck.Load(), int32(2), "both maintenance slots busy")
	}, 10*time.Second, 20*time.Millisecond)

	env.Open(t, p)
	// λ = 1000 ÷ 100 = 10 a second: 30 within a few seconds of opening.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var through int64
		assert.NoError(c, env.Schema.Pool.QueryRow(context.Background(),
			`SELECT admitted_through FROM waiting_rooms WHERE product_id = $1`, p.ID).Scan(&through))
		assert.GreaterOrEqual(c, through, int64(30))
	}, 20*time.Second, 100*time.Millisecond)
	require.GreaterOrEqual(t, stuck.Load(), int32(2), "maintenance was stuck throughout")
}
