package reservation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/schedule"
)

// TestGatherAfter: pacing outweighs gathering, and gathering follows its
// rule (schedule.Gathering.After).
func TestGatherAfter(t *testing.T) {
	t.Parallel()
	o := DrainOptions{Gather: schedule.Gathering{Wait: 25 * time.Millisecond, From: 10, Below: 200}}
	require.Equal(t, schedule.Pace, o.gatherAfter(1, schedule.Turn{Pace: true}), "a tenant over its share paces")
	require.Equal(t, schedule.Pace, o.gatherAfter(40, schedule.Turn{Pace: true}))
	require.Equal(t, 25*time.Millisecond, o.gatherAfter(40, schedule.Turn{}))
	require.Zero(t, DrainOptions{}.gatherAfter(40, schedule.Turn{}), "without a gathering nothing waits")
}
