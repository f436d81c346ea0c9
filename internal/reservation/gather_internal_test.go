package reservation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/schedule"
)

// TestGatherAfter: which batches that emptied the queue make the next one
// wait, and how long.
func TestGatherAfter(t *testing.T) {
	t.Parallel()
	o := DrainOptions{Gather: 25 * time.Millisecond, GatherBelow: 200}
	for _, c := range []struct {
		says string
		n    int
		pace bool
		want time.Duration
	}{
		{"a lone request: a quiet sale's next is claimed at once", 1, false, 0},
		{"a few dozen: a burst the drain keeps up with", 40, false, 25 * time.Millisecond},
		{"just under the threshold", 199, false, 25 * time.Millisecond},
		{"a big batch: its requests waited long enough", 200, false, 0},
		{"a tenant over its share paces whatever the batch", 1, true, schedule.Pace},
		{"pacing outweighs gathering", 40, true, schedule.Pace},
	} {
		require.Equal(t, c.want, o.gatherAfter(c.n, schedule.Turn{Pace: c.pace}), c.says)
	}
	require.Zero(t, DrainOptions{}.gatherAfter(40, schedule.Turn{}), "without Gather nothing waits")
}
