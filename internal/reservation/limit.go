package reservation

import (
	"context"
	"sync"

	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// Limits caps how many numbers per second the claim path takes, globally in
// this process and per product, so that workers consume at a rate the
// database sustains however deep the queue is. Zero means unlimited.
type Limits struct {
	Global     float64
	PerProduct float64
}

// limiter applies Limits after each committed batch: a batch that claimed n
// numbers makes the next batch wait until the budget has recovered. Batches
// are never split, so the burst is one second's worth of numbers.
type limiter struct {
	limits  Limits
	global  *rate.Limiter
	mu      sync.Mutex
	product map[uuid.UUID]*rate.Limiter
}

func newLimiter(l Limits) *limiter {
	lim := &limiter{limits: l, product: map[uuid.UUID]*rate.Limiter{}}
	if l.Global > 0 {
		lim.global = rate.NewLimiter(rate.Limit(l.Global), max(1, int(l.Global)))
	}
	return lim
}

func (l *limiter) forProduct(id uuid.UUID) *rate.Limiter {
	if l.limits.PerProduct <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.product[id]
	if !ok {
		r = rate.NewLimiter(rate.Limit(l.limits.PerProduct), max(1, int(l.limits.PerProduct)))
		l.product[id] = r
	}
	return r
}

// wait blocks until n more numbers may be claimed for the product.
func (l *limiter) wait(ctx context.Context, productID uuid.UUID, n int) error {
	for _, r := range []*rate.Limiter{l.global, l.forProduct(productID)} {
		if r == nil || n == 0 {
			continue
		}
		if err := r.WaitN(ctx, min(n, r.Burst())); err != nil {
			return err
		}
	}
	return nil
}
