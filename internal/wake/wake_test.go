package wake

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A claim batch's decisions go out in notifications under PostgreSQL's
// 8,000-byte payload limit and come back as the same ids in order.
func TestPayloadsRoundTrip(t *testing.T) {
	t.Parallel()
	ids := make([]uuid.UUID, 2*idsPerNotification+7)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	payloads := Payloads(ids)
	require.Len(t, payloads, 3)
	var back []uuid.UUID
	for _, p := range payloads {
		require.Less(t, len(p), 8000)
		got, err := parse(p)
		require.NoError(t, err)
		back = append(back, got...)
	}
	require.Equal(t, ids, back)

	// One id as the orders' trigger writes it: 16 bytes, no padding.
	one, err := parse(Payloads(ids[:1])[0])
	require.NoError(t, err)
	require.Equal(t, ids[:1], one)
	_, err = parse("not base64!")
	require.Error(t, err)
	_, err = parse("AAAA") // 3 bytes: not whole ids
	require.Error(t, err)
}
