package live_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/live"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

func TestMain(m *testing.M) { testfix.VerifyNoLeaks(m) }

// next waits for the subscription's next event.
func next(t *testing.T, s *live.Subscription) (live.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.C:
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return live.Event{}, false
	}
}

func TestSnapshotDeltasAndResume(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 20})
	hub := live.NewHub(env.Schema.Pool, live.Options{Period: 50 * time.Millisecond, Idle: 50 * time.Millisecond})
	t.Cleanup(hub.Close)

	sub, err := hub.Subscribe(context.Background(), p.ID, -1)
	require.NoError(t, err)
	ev, ok := next(t, sub)
	require.True(t, ok)
	require.Equal(t, "snapshot", ev.Name)
	var snap live.Snapshot
	require.NoError(t, json.Unmarshal(ev.Data, &snap))
	require.Equal(t, 20, snap.Available)
	first := ev.Version

	env.Reserve(t, p, "alice", reservation.Params{Numbers: []int32{3, 4}})
	env.Drain(t, p, 10)
	ev, ok = next(t, sub)
	require.True(t, ok)
	require.Equal(t, "delta", ev.Name)
	var d live.Delta
	require.NoError(t, json.Unmarshal(ev.Data, &d))
	require.Equal(t, []int32{3, 4}, d.Taken)
	require.Empty(t, d.Freed)
	require.Equal(t, 18, d.Available)

	// Released: freed.
	got := env.Get(t, p, env.Reserve(t, p, "bob", reservation.Params{Numbers: []int32{7}}).ID)
	env.Drain(t, p, 10)
	ev, _ = next(t, sub)
	require.NoError(t, json.Unmarshal(ev.Data, &d))
	require.Equal(t, []int32{7}, d.Taken)
	got = env.Get(t, p, got.ID)
	_, err = env.Service.Release(context.Background(), p.TenantID, "bob", *got.HoldID)
	require.NoError(t, err)
	ev, _ = next(t, sub)
	require.NoError(t, json.Unmarshal(ev.Data, &d))
	require.Equal(t, []int32{7}, d.Freed)
	last := ev.Version
	sub.Close()

	// Resuming from the first version replays the deltas since; from the
	// last, nothing; from a version never seen, a snapshot.
	resumed, err := hub.Subscribe(context.Background(), p.ID, first)
	require.NoError(t, err)
	var names []string
	for range 3 {
		ev, _ := next(t, resumed)
		names = append(names, ev.Name)
	}
	require.Equal(t, []string{"delta", "delta", "delta"}, names)
	resumed.Close()
	upToDate, err := hub.Subscribe(context.Background(), p.ID, last)
	require.NoError(t, err)
	select {
	case ev := <-upToDate.C:
		t.Fatalf("nothing is new, got %s", ev.Name)
	case <-time.After(200 * time.Millisecond):
	}
	upToDate.Close()
	fresh, err := hub.Subscribe(context.Background(), p.ID, 1<<40)
	require.NoError(t, err)
	ev, _ = next(t, fresh)
	require.Equal(t, "snapshot", ev.Name)
	fresh.Close()
}

// A subscriber that does not read is dropped, not buffered; the feed costs
// the same queries whatever the number of subscribers.
func TestSlowSubscriberDroppedAndQueriesFlat(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 50})
	period := 20 * time.Millisecond
	hub := live.NewHub(env.Schema.Pool, live.Options{Period: period, Buffer: 2, Idle: time.Minute})
	t.Cleanup(hub.Close)

	slow, err := hub.Subscribe(context.Background(), p.ID, -1)
	require.NoError(t, err)
	var others []*live.Subscription
	for range 200 {
		s, err := hub.Subscribe(context.Background(), p.ID, -1)
		require.NoError(t, err)
		others = append(others, s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range others {
		go func() {
			for {
				select {
				case _, ok := <-s.C:
					if !ok {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	before := hub.Queries()
	start := time.Now()
	for i := range 4 {
		env.Reserve(t, p, "b"+string(rune('a'+i)), reservation.Params{Quantity: 1})
		env.Drain(t, p, 10)
		time.Sleep(3 * period)
	}
	// The slow one had a snapshot and room for one more event: dropped.
	n := 0
	for range slow.C {
		n++
	}
	require.LessOrEqual(t, n, 3, "at most the buffer's worth, then closed")
	elapsed := time.Since(start)
	queries := hub.Queries() - before
	require.LessOrEqual(t, float64(queries), elapsed.Seconds()/period.Seconds()+3,
		"one read a period for 201 subscribers, not one each")
	for _, s := range others {
		s.Close()
	}
}
