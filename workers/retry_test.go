package workers

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
)

// Failed jobs come back after attempt² seconds, at most five minutes: a
// fourth attempt 16 s after the third, not River's 81 s.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{1: time.Second, 3: 9 * time.Second, 4: 16 * time.Second, 25: 5 * time.Minute} {
		got := time.Until(retryPolicy{}.NextRetry(&rivertype.JobRow{Attempt: attempt}))
		require.InDelta(t, want.Seconds(), got.Seconds(), 0.5, "attempt %d", attempt)
	}
}
