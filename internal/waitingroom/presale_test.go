package waitingroom_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/waitingroom"
)

// A presale behind the waiting room: code holders who enter before the
// window opens are drawn at its opening over the round's own committed
// seed and placed first; a holder who comes later queues after them; the
// general sale's entrants wait for their own draw and are placed after
// every presale entrant. Each draw is verifiable on its own.
func TestPresaleRoundDrawsCodeHoldersFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 2, ShoppingSeconds: 1}, time.Now().Add(3*time.Hour))
	ctx := context.Background()
	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	closes := opens.Add(time.Hour)
	presale := func(buyer string) waitingroom.Entry {
		t.Helper()
		var e waitingroom.Entry
		require.NoError(t, pgx.BeginFunc(ctx, b.env.Schema.Pool, func(tx pgx.Tx) error {
			var err error
			e, _, err = b.rooms.JoinPresale(ctx, tx, b.product.TenantID, b.product.ID, buyer, opens, closes)
			return err
		}))
		return e
	}
	require.NoError(t, pgx.BeginFunc(ctx, b.env.Schema.Pool, func(tx pgx.Tx) error {
		return waitingroom.AddPresale(ctx, tx, b.product.ID, opens, closes)
	}))
	before, err := b.rooms.Fairness(ctx, b.product.ID)
	require.NoError(t, err)
	require.Len(t, before.Presales, 1)
	require.Empty(t, before.Presales[0].Seed, "the round's seed stays secret before it opens")

	general := []waitingroom.Entry{b.join(t, "g0"), b.join(t, "g1"), b.join(t, "g2")}
	var club []waitingroom.Entry
	for i := range 5 {
		club = append(club, presale(fmt.Sprintf("club-%d", i)))
	}
	moved := presale("g0") // in the general line, then came with a code
	require.Equal(t, general[0].ID, moved.ID, "the same entry moves to the presale's line")
	club = append(club, moved)
	require.Equal(t, club[1], presale("club-1"), "joining again changes nothing")
	require.Equal(t, club[1], b.join(t, "club-1"), "nor does joining again without the code: the presale's line is kept")

	st, err := b.rooms.Poll(ctx, b.rooms.QueueToken(club[0]))
	require.NoError(t, err)
	require.Equal(t, waitingroom.StatusWaiting, st.Status)
	require.True(t, st.Presale)
	require.True(t, opens.Equal(*st.OpensAt), "a code holder waits for the presale's draw, not the general sale's")
	st, err = b.rooms.Poll(ctx, b.rooms.QueueToken(general[1]))
	require.NoError(t, err)
	require.False(t, st.Presale)
	require.True(t, b.product.OnSaleAt.Equal(*st.OpensAt))

	// The window opens: its draw places the six code holders first.
	require.NoError(t, b.env.Schema.Pool.QueryRow(ctx, `UPDATE presale_rounds SET opens_at = now() - interval '1 second'
		WHERE product_id = $1 RETURNING opens_at`, b.product.ID).Scan(&opens))
	res := b.tick(t, 0)
	require.EqualValues(t, 6, res.Drawn)
	late := presale("club-late")
	require.EqualValues(t, 7, late.Position, "a code holder after the presale's draw queues after its entrants")
	res = b.tick(t, time.Second)
	require.EqualValues(t, 2, res.Admitted, "admission runs while the presale is open")

	after, err := b.rooms.Fairness(ctx, b.product.ID)
	require.NoError(t, err)
	round := after.Presales[0]
	seed, err := hex.DecodeString(round.Seed)
	require.NoError(t, err)
	sum := sha256.Sum256(seed)
	require.Equal(t, before.Presales[0].Commitment, hex.EncodeToString(sum[:]))
	require.EqualValues(t, 6, round.Entrants)
	ids := make([]uuid.UUID, len(club))
	for i, e := range club {
		ids[i] = e.ID
	}
	order, err := b.rooms.PresaleDrawOrder(ctx, b.product.ID, round.ID)
	require.NoError(t, err)
	require.Equal(t, waitingroom.Draw(seed, ids), order, "anyone can recompute the presale's draw")
	for i, id := range order {
		var pos int64
		require.NoError(t, b.env.Schema.Pool.QueryRow(ctx, `SELECT position FROM queue_entries WHERE id = $1`, id).Scan(&pos))
		require.EqualValues(t, i+1, pos)
	}
	_, err = b.rooms.PresaleDrawOrder(ctx, uuid.New(), round.ID)
	require.Error(t, err, "a round is read through its own product only")

	// The window closes: nobody is let in until the general sale opens.
	b.env.Exec(t, `UPDATE presale_rounds SET opens_at = now() - interval '2 hours', closes_at = now() - interval '1 second'
		WHERE product_id = $1`, b.product.ID)
	require.Zero(t, b.tick(t, 10*time.Second).Admitted, "between the presale and the general sale")

	// The general sale's draw places its two entrants after all seven.
	b.open(t)
	res = b.tick(t, 0)
	require.EqualValues(t, 2, res.Drawn)
	fair, err := b.rooms.Fairness(ctx, b.product.ID)
	require.NoError(t, err)
	require.EqualValues(t, 7, fair.PositionsBefore)
	require.EqualValues(t, 2, fair.Entrants)
	gseed, err := hex.DecodeString(fair.Seed)
	require.NoError(t, err)
	gorder, err := b.rooms.DrawOrder(ctx, b.product.ID)
	require.NoError(t, err)
	require.Equal(t, waitingroom.Draw(gseed, []uuid.UUID{general[1].ID, general[2].ID}), gorder)
	buyers := map[uuid.UUID]string{general[1].ID: "g1", general[2].ID: "g2"}
	for i, id := range gorder {
		token := b.rooms.QueueToken(waitingroom.Entry{ID: id, ProductID: b.product.ID, TenantID: b.product.TenantID, BuyerID: buyers[id]})
		require.EventuallyWithT(t, func(c *assert.CollectT) { // polls see the room as of at most a second ago
			st, err := b.rooms.Poll(ctx, token)
			require.NoError(c, err)
			require.EqualValues(c, 8+i, st.Position)
		}, 5*time.Second, 100*time.Millisecond)
	}
}
