package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/schedule"
)

// TestGathering: which batches that emptied the queue make the next one
// wait.
func TestGathering(t *testing.T) {
	t.Parallel()
	g := schedule.Gathering{Wait: 25 * time.Millisecond, From: 10, Below: 200}
	for _, c := range []struct {
		says string
		n    int
		want time.Duration
	}{
		{"a lone request: a quiet sale's next is claimed at once", 1, 0},
		{"a few at a time: still a quiet sale", 9, 0},
		{"ten: a burst the drain keeps up with", 10, 25 * time.Millisecond},
		{"a few dozen", 40, 25 * time.Millisecond},
		{"just under the top", 199, 25 * time.Millisecond},
		{"a big batch: its requests waited long enough", 200, 0},
	} {
		require.Equal(t, c.want, g.After(c.n), c.says)
	}
	require.Zero(t, schedule.Gathering{}.After(40), "the zero value never waits")
	w := schedule.Gather()
	require.Positive(t, w.Wait)
	require.Less(t, w.From, w.Below)
}
