// Package logbuf batches log lines into few writes: an access log writes a
// line per request, and a write call per line costs more than encoding it
// (BenchmarkAccessLine here and in api). Lines are kept whole and written at
// most delay after they arrive (or when 64 KB have gathered), so a process
// killed outright loses at most that much of them.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Writer buffers whole writes (log records) in front of w.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	delay time.Duration
	buf   []byte
	timer *time.Timer
}

// flushAt is the size that is written at once, without waiting.
const flushAt = 64 << 10

// New buffers writes to w for at most delay.
func New(w io.Writer, delay time.Duration) *Writer {
	return &Writer{w: w, delay: delay, buf: make([]byte, 0, flushAt)}
}

// Write keeps p (one record) for the next flush.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	switch {
	case len(b.buf) >= flushAt:
		b.flushLocked()
	case b.timer == nil:
		b.timer = time.AfterFunc(b.delay, b.Flush)
	}
	return len(p), nil
}

// Flush writes what is kept (and is called as the process stops).
func (b *Writer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *Writer) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.buf) > 0 {
		_, _ = b.w.Write(b.buf) // stderr: nowhere to report its failure
		b.buf = b.buf[:0]
	}
}
