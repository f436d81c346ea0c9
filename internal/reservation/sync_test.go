package reservation_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// The synchronous baseline decides in the request: 40 buyers race for 10
// numbers, each answer is the decision, nothing is queued, nothing
// oversold, and a replay answers the same decision.
func TestClaimInRequest(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	svc := reservation.NewService(env.Schema.Pool, nil, nil, env.Logger)
	svc.SetClaimInRequest(env.Claimer)

	ctx := context.Background()
	outcomes := make([]*reservation.Request, 40)
	var wg sync.WaitGroup
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc, err := svc.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: fmt.Sprintf("b%d", i),
				IdempotencyKey: "k", Params: reservation.Params{Numbers: testfix.Nums(int32(1 + i%10))}})
			if err == nil {
				outcomes[i] = acc.Request
			}
		}()
	}
	wg.Wait()
	held := 0
	for i, r := range outcomes {
		require.NotNil(t, r, "buyer %d", i)
		switch r.Status {
		case reservation.StatusHeld:
			held++
		case reservation.StatusRejected:
			require.Equal(t, reservation.ReasonSeatTaken, r.Reason)
		default:
			t.Fatalf("buyer %d: %s is no decision", i, r.Status)
		}
	}
	require.Equal(t, 10, held, "each number once")
	var queued, jobs int
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM reservation_requests WHERE status = 'QUEUED'`).Scan(&queued))
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs))
	require.Zero(t, queued)
	require.Zero(t, jobs, "no claim job queued")

	again, err := svc.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: "b0", IdempotencyKey: "k",
		Params: reservation.Params{Numbers: testfix.Nums(1)}})
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, outcomes[0].ID, again.Request.ID)
	require.Equal(t, outcomes[0].Status, again.Request.Status)
	env.RequireInvariants(t)
}
