package logbuf_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/logbuf"
)

type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) read() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.writes
}

// Lines arrive whole, in order, in few writes, and no later than the delay.
func TestLinesAreBatchedAndDelivered(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	w := logbuf.New(&out, 50*time.Millisecond)
	for i := range 1000 {
		_, err := w.Write([]byte(strings.Repeat("x", i%50) + "\n"))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { s, _ := out.read(); return strings.Count(s, "\n") == 1000 }, 2*time.Second, 10*time.Millisecond,
		"every line, within the delay")
	s, writes := out.read()
	require.Less(t, writes, 10, "a thousand lines in a few writes")
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		require.Equal(t, strings.Repeat("x", i%50), line, "whole and in order")
	}
	_, err := w.Write([]byte("last\n"))
	require.NoError(t, err)
	w.Flush()
	s, _ = out.read()
	require.True(t, strings.HasSuffix(s, "last\n"), "Flush writes what is kept at once")
}

// An access-log line written straight to a file, and through the buffer
// (`go test -bench . ./internal/logbuf`).
func BenchmarkAccessLine(b *testing.B) {
	for _, buffered := range []bool{false, true} {
		name := map[bool]string{false: "direct", true: "buffered"}[buffered]
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
			require.NoError(b, err)
			defer f.Close()
			var w io.Writer = f
			if buffered {
				lw := logbuf.New(f, 200*time.Millisecond)
				defer lw.Flush()
				w = lw
			}
			log := slog.New(slog.NewJSONHandler(w, nil))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("method", "POST"),
					slog.String("route", "/v1/products/:id/reservations"), slog.Int("status", 202),
					slog.Float64("duration_ms", 1.234), slog.Int("bytes", 180),
					slog.String("request_id", "0193a8e2-7c4f-7d2a-9b1e-3f5c6d7e8f90"),
					slog.String("tenant", "0193a8e2-7c4f-7d2a-9b1e-3f5c6d7e8f91"))
			}
		})
	}
}
