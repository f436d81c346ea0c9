package api

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/logbuf"
)

// TestAccessLineAsSlog: the access line is what slog's JSONHandler writes
// for the same record, byte for byte but for invalid UTF-8, so the format operations.md
// documents (and log pipelines parse) is the process's other logs' one.
func TestAccessLineAsSlog(t *testing.T) {
	t.Parallel()
	tenant := uuid.New()
	for _, c := range []struct {
		at                       time.Time
		method, route, id, trace string
		status, bytes            int
		elapsed                  time.Duration
		tenant                   uuid.UUID
	}{
		{time.Date(2026, 12, 6, 12, 26, 28, 123456789, time.UTC), "POST", "/v1/products/:id/reservations", "0193a8e2-7c4f-7d2a-9b1e-3f5c6d7e8f90", "",
			202, 180, 1234567 * time.Nanosecond, tenant},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", -3*3600)), "GET", "unmatched", "req-42", "4bf92f3577b34da6a3ce929d0e0e4736",
			404, 0, 0, uuid.Nil},
		{time.Date(2026, 7, 1, 0, 0, 0, 1000, time.UTC), "PR\"OP\\FIND\x01\xff<&>", "/", "a", "", 599, 1 << 40, 90 * time.Second, tenant},
		{time.Date(2026, 7, 1, 0, 0, 0, 500000000, time.UTC), "GET", "/v1/events", "x", "", 200, 12, 999 * time.Microsecond, uuid.Nil},
	} {
		var want bytes.Buffer
		r := slog.NewRecord(c.at, slog.LevelInfo, "request", 0)
		r.AddAttrs(slog.String("method", c.method), slog.String("route", c.route), slog.Int("status", c.status),
			slog.Float64("duration_ms", float64(c.elapsed.Microseconds())/1000), slog.Int("bytes", c.bytes),
			slog.String("request_id", c.id))
		if c.trace != "" {
			r.AddAttrs(slog.String("trace_id", c.trace))
		}
		if c.tenant != uuid.Nil {
			r.AddAttrs(slog.String("tenant", c.tenant.String()))
		}
		require.NoError(t, slog.NewJSONHandler(&want, nil).Handle(context.Background(), r))
		got := accessLine(nil, c.at, c.method, c.route, c.status, c.elapsed, c.bytes, c.id, c.trace, c.tenant)
		require.JSONEq(t, want.String(), string(got))
		if utf8.ValidString(c.method) {
			// Invalid UTF-8 aside, which slog writes as \ufffd and this
			// line as the character itself.
			require.Equal(t, want.String(), string(got))
		}
	}
}

// BenchmarkAccessLine: one request's access line, written as the API
// writes it, through a logbuf to a file (internal/logbuf's benchmark of
// the same line through slog is its baseline).
func BenchmarkAccessLine(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
	require.NoError(b, err)
	defer f.Close()
	w := logbuf.New(f, 200*time.Millisecond)
	defer w.Flush()
	tenant := uuid.New()
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		line = accessLine(line[:0], time.Now(), "POST", "/v1/products/:id/reservations", 202, 1234567*time.Nanosecond,
			180, "0193a8e2-7c4f-7d2a-9b1e-3f5c6d7e8f90", "", tenant)
		_, _ = w.Write(line)
	}
}
