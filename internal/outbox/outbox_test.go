package outbox_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/dbtest"
	"boxoffice/internal/outbox"
)

// An event's payload comes back as it was written — keys in the order the
// writer gave them — and the relay's marking takes it out of the pending.
func TestEventsComeBackAsWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := dbtest.NewSchema(t, 2)
	tenant := uuid.New()
	type held struct {
		HoldID  uuid.UUID `json:"holdId"`
		Numbers []int32   `json:"numbers"`
	}
	holds := make([]held, 200) // large enough to be stored compressed
	for i := range holds {
		holds[i] = held{HoldID: uuid.New(), Numbers: []int32{int32(i)}}
	}
	payload := struct {
		ProductID uuid.UUID `json:"productId"`
		Holds     []held    `json:"holds"`
	}{uuid.New(), holds}
	require.NoError(t, outbox.Add(ctx, schema.Pool,
		outbox.New{TenantID: tenant, Topic: "holds.created", Payload: payload},
		outbox.New{TenantID: tenant, Topic: "product.sold_out", Payload: map[string]any{"productId": payload.ProductID}}))

	events, err := outbox.Pending(ctx, schema.Pool, 10, false)
	require.NoError(t, err)
	require.Len(t, events, 2)
	want, err := json.Marshal(payload)
	require.NoError(t, err)
	require.Equal(t, "holds.created", events[0].Topic)
	require.Equal(t, tenant, events[0].TenantID)
	require.Equal(t, string(want), string(events[0].Payload), "the payload byte for byte, keys in the writer's order")
	require.JSONEq(t, `{"productId":"`+payload.ProductID.String()+`"}`, string(events[1].Payload))
	var productID string
	require.NoError(t, schema.Pool.QueryRow(ctx, `SELECT payload ->> 'productId' FROM outbox WHERE id = $1`,
		events[1].ID).Scan(&productID))
	require.Equal(t, payload.ProductID.String(), productID, "the payload's fields can be queried")

	require.NoError(t, outbox.MarkPublished(ctx, schema.Pool, []int64{events[0].ID}))
	events, err = outbox.Pending(ctx, schema.Pool, 10, false)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "product.sold_out", events[0].Topic)
}
