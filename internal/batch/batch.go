// Package batch coalesces concurrent calls into one unit of work: the first
// caller of a burst waits a moment for company, then everyone who arrived
// meanwhile is served by one run — one transaction, one commit — instead of
// one each. Accepting reservations and joining waiting rooms use it.
package batch

import (
	"context"
	"sync"
	"time"
)

// Result is one call's outcome.
type Result[T any] struct {
	Value T
	Err   error
}

// Coalescer gathers concurrent calls of Do into batches.
type Coalescer[Req, Res any] struct {
	// Linger is how long the first caller of a burst waits for company.
	Linger time.Duration
	// Timeout bounds one run. The run belongs to every caller in it, so it
	// does not end with the first caller's context; this bounds it instead.
	Timeout time.Duration
	// MaxRuns, when not 0, bounds the runs in progress. A batch whose
	// linger ended while MaxRuns are running waits for one to finish, and
	// keeps gathering callers meanwhile: under load batches grow instead
	// of multiplying.
	MaxRuns int
	// Run serves a batch and returns one result per request, in order.
	Run func(ctx context.Context, reqs []Req) []Result[Res]

	mu      sync.Mutex
	pending []call[Req, Res]
	runs    chan struct{} // MaxRuns slots, made on first use
}

type call[Req, Res any] struct {
	req  Req
	done chan Result[Res]
}

// Do adds req to the current batch and waits for its result (or ctx).
func (c *Coalescer[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	me := call[Req, Res]{req: req, done: make(chan Result[Res], 1)}
	c.mu.Lock()
	c.pending = append(c.pending, me)
	leader := len(c.pending) == 1
	if leader && c.MaxRuns > 0 && c.runs == nil {
		c.runs = make(chan struct{}, c.MaxRuns)
	}
	runs := c.runs
	c.mu.Unlock()
	if leader {
		time.Sleep(c.Linger)
		c.lead(ctx, runs)
	}
	select {
	case r := <-me.done:
		return r.Value, r.Err
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// lead takes a run slot, then serves every call pending by then. The slot
// is given back however Run ends: a lost one would stall every later batch.
func (c *Coalescer[Req, Res]) lead(ctx context.Context, runs chan struct{}) {
	if runs != nil {
		runs <- struct{}{}
		defer func() { <-runs }()
	}
	c.mu.Lock()
	calls := c.pending
	c.pending = nil
	c.mu.Unlock()
	reqs := make([]Req, len(calls))
	for i, cl := range calls {
		reqs[i] = cl.req
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Timeout)
	defer cancel()
	results := c.Run(rctx, reqs)
	for i, cl := range calls {
		cl.done <- results[i]
	}
}
