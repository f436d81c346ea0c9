package waitingroom

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPollAfterFollowsTheWait(t *testing.T) {
	t.Parallel()
	now := time.Now()
	in := func(d time.Duration) *time.Time { at := now.Add(d); return &at }
	for _, c := range []struct {
		name     string
		st       Status
		min, max time.Duration
	}{
		{"near the front", Status{Position: 1020, ETASeconds: 2}, time.Second, time.Second},
		{"a minute away", Status{Position: 5000, ETASeconds: 60}, 15 * time.Second, 15 * time.Second},
		{"far back", Status{Position: 190000, ETASeconds: 3600}, 20 * time.Second, 20 * time.Second},
		{"an hour before the draw", Status{OpensAt: in(time.Hour)}, 20 * time.Second, 20 * time.Second},
		{"seconds before the draw, spread after it", Status{OpensAt: in(5 * time.Second)}, 5 * time.Second, 8 * time.Second},
		{"the draw due", Status{OpensAt: in(-time.Second)}, time.Second, 3 * time.Second},
		{"admission paused", Status{Position: 40}, 10 * time.Second, 10 * time.Second},
	} {
		for range 20 {
			got := pollAfter(&c.st, now)
			require.GreaterOrEqual(t, got, c.min, c.name)
			require.LessOrEqual(t, got, c.max, c.name)
		}
	}
}
