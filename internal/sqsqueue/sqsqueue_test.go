package sqsqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/testfix"
	"boxoffice/jobs"
	"boxoffice/workers"
)

type testBundle struct {
	env       *testfix.Env
	client    *sqs.Client
	cfg       sqsqueue.Config
	publisher *sqsqueue.Publisher
	service   *reservation.Service
	ops       *sqsqueue.Ops
	product   *product.Product
}

// setup runs kumo in-process with a main queue and a dead-letter queue
// (maxReceiveCount 2, visibility 1s) and a publisher; consumers are started
// by each test.
func setup(t *testing.T) *testBundle {
	t.Helper()
	env := testfix.New(t, testfix.Options{})
	ctx := context.Background()
	client, mainURL, dlqURL := testfix.SQS(t, 2, time.Second)
	cfg := sqsqueue.Config{QueueURL: mainURL, DLQURL: dlqURL, MaxReceiveCount: 2, VisibilityTimeout: time.Second,
		WaitTime: time.Second, Pollers: 2, Workers: 2, BatchSize: 50}
	pubCtx, cancel := context.WithCancel(ctx)
	publisher := sqsqueue.NewPublisher(client, mainURL, env.Schema.Pool, env.Logger)
	publisher.Start(pubCtx)
	t.Cleanup(func() { cancel(); publisher.Wait() })
	return &testBundle{
		env: env, client: client, cfg: cfg, publisher: publisher,
		service: reservation.NewService(env.Schema.Pool, publisher, nil, env.Logger, reservation.ServiceOptions{}),
		ops:     sqsqueue.NewOps(client, cfg, env.Schema.Pool),
		product: env.Product(t, testfix.ProductOpts{Capacity: 100}),
	}
}

// consume runs a consumer until the returned stop is called (or the test ends).
func (b *testBundle) consume(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = workers.NewSQSConsumer(b.client, b.cfg, b.env.Claimer, b.env.Schema.Pool, b.env.Logger).Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func (b *testBundle) reserve(t *testing.T, buyer string, params reservation.Params) *reservation.Request {
	t.Helper()
	acc, err := b.service.Accept(context.Background(), reservation.AcceptParams{
		Product: b.product, BuyerID: buyer, IdempotencyKey: uuid.NewString(), Params: params})
	require.NoError(t, err)
	return acc.Request
}

func (b *testBundle) waitStatus(t *testing.T, id uuid.UUID, status string) *reservation.Request {
	t.Helper()
	var r *reservation.Request
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r = b.env.Get(c, b.product, id)
		assert.Equal(c, status, r.Status)
	}, 20*time.Second, 20*time.Millisecond, "request %s never became %s", id, status)
	return r
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func (b *testBundle) queueEmpty(t *testing.T) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mainQ, _, err := b.ops.Stats(context.Background())
		if assert.NoError(c, err) {
			assert.Zero(c, mainQ.Visible+mainQ.NotVisible)
		}
	}, 10*time.Second, 20*time.Millisecond)
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.consume(t)
	var ids []uuid.UUID
	for i := range 30 {
		ids = append(ids, b.reserve(t, fmt.Sprintf("buyer-%d", i), reservation.Params{Quantity: 2}).ID)
	}
	seen := map[int32]bool{}
	for _, id := range ids {
		r := b.waitStatus(t, id, reservation.StatusHeld)
		for _, n := range r.Numbers {
			require.False(t, seen[n])
			seen[n] = true
		}
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM reservation_requests WHERE enqueued_at IS NULL AND status = 'QUEUED'`),
		"nothing waiting unpublished")
	b.queueEmpty(t)
	b.env.RequireInvariants(t)
}

func TestDuplicateDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.reserve(t, "alice", reservation.Params{Numbers: testfix.Nums(7, 8)})
	// The same message twice more before any consumer runs, then once more after.
	ref := reservation.Ref{ID: r.ID, ProductID: b.product.ID, TenantID: b.product.TenantID}
	require.NoError(t, b.publisher.Publish(context.Background(), []reservation.Ref{ref, ref}))
	b.consume(t)
	held := b.waitStatus(t, r.ID, reservation.StatusHeld)
	require.NoError(t, b.publisher.Publish(context.Background(), []reservation.Ref{ref}))
	b.queueEmpty(t)

	after := b.env.Get(t, b.product, r.ID)
	require.Equal(t, held.HoldID, after.HoldID, "one outcome")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM holds WHERE request_id = $1`, r.ID), "one hold")
	b.env.RequireInvariants(t)
}

// A request refused as it is recorded sends no message, and the repair
// job finds nothing to publish.
func TestRefusedAtOnceIsNotPublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stop := b.consume(t)
	b.waitStatus(t, b.reserve(t, "alice", reservation.Params{Numbers: testfix.Nums(5)}).ID, reservation.StatusHeld)
	b.queueEmpty(t)
	stop()

	r := b.reserve(t, "bob", reservation.Params{Numbers: testfix.Nums(5)})
	require.Equal(t, reservation.StatusRejected, r.Status)
	require.Equal(t, reservation.ReasonSeatTaken, r.Reason)
	mainQ, _, err := b.ops.Stats(context.Background())
	require.NoError(t, err)
	require.Zero(t, mainQ.Visible+mainQ.NotVisible, "no message for a decided request")
	b.env.Exec(t, `UPDATE reservation_requests SET created_at = created_at - interval '1 minute'`)
	res, err := jobs.Repair(context.Background(), jobs.Deps{
		Pool: b.env.Schema.Pool, Enqueuer: b.publisher, Logger: b.env.Logger,
		Config: jobs.Config{RepublishAfter: time.Second, RedeliveryWindow: time.Hour},
	})
	require.NoError(t, err)
	require.Equal(t, jobs.RepairResult{}, res)
	b.env.RequireInvariants(t)
}

// failingEnqueuer is a queue that loses every publish after commit.
type failingEnqueuer struct{ *sqsqueue.Publisher }

func (failingEnqueuer) Publish(context.Context, []reservation.Ref) error {
	return errors.New("injected: process died between commit and publish")
}

func TestCommitWithoutPublishIsRepaired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lossy := reservation.NewService(b.env.Schema.Pool, failingEnqueuer{b.publisher}, nil, b.env.Logger, reservation.ServiceOptions{})
	acc, err := lossy.Accept(context.Background(), reservation.AcceptParams{
		Product: b.product, BuyerID: "alice", IdempotencyKey: "k", Params: reservation.Params{Quantity: 1}})
	require.NoError(t, err, "the shopper's request stands even though the publish failed")
	b.consume(t)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM reservation_requests WHERE enqueued_at IS NULL`))
	b.queueEmpty(t)
	require.Equal(t, reservation.StatusQueued, b.env.Get(t, b.product, acc.Request.ID).Status, "nothing published it")
	// Older than RepublishAfter, as if the process had died a while ago.
	b.env.Exec(t, `UPDATE reservation_requests SET created_at = created_at - interval '1 minute' WHERE id = $1`, acc.Request.ID)

	res, err := jobs.Repair(context.Background(), jobs.Deps{
		Pool: b.env.Schema.Pool, Enqueuer: b.publisher, Logger: b.env.Logger,
		Config: jobs.Config{RepublishAfter: time.Second, RedeliveryWindow: time.Hour},
	})
	require.NoError(t, err)
	require.Equal(t, jobs.RepairResult{Unpublished: 1}, res)
	b.waitStatus(t, acc.Request.ID, reservation.StatusHeld)
	b.env.RequireInvariants(t)
}

func TestPoisonGoesToDLQAndRedrives(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var broken atomic.Bool
	broken.Store(true)
	b.env.Claimer.BeforeCommit = func(context.Context) error {
		if broken.Load() {
			return errors.New("injected: claim keeps failing")
		}
		return nil
	}
	r := b.reserve(t, "alice", reservation.Params{Quantity: 1})
	_, err := b.client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(b.cfg.QueueURL), MessageBody: aws.String("not a request")})
	require.NoError(t, err)
	b.consume(t)

	// Both messages reach the dead-letter queue after maxReceiveCount (2) deliveries.
	var peeked []sqsqueue.DLQMessage
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		peeked, err = b.ops.PeekDLQ(context.Background(), 10)
		if assert.NoError(c, err) {
			assert.Len(c, peeked, 2)
		}
	}, 20*time.Second, 100*time.Millisecond)
	var withRequest int
	for _, m := range peeked {
		if m.Request != nil {
			withRequest++
			require.Equal(t, r.ID, m.Request.ID)
		}
	}
	require.Equal(t, 1, withRequest, "one carries the request, the other is garbage")
	require.Equal(t, reservation.StatusQueued, b.env.Get(t, b.product, r.ID).Status)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM reservation_requests WHERE dead_lettered_at IS NOT NULL`))

	// Peeking consumed nothing; the repair job leaves dead letters alone.
	again, err := b.ops.PeekDLQ(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, again, 2)
	res, err := jobs.Repair(context.Background(), jobs.Deps{
		Pool: b.env.Schema.Pool, Enqueuer: b.publisher, Logger: b.env.Logger,
		Config: jobs.Config{RepublishAfter: time.Nanosecond, RedeliveryWindow: time.Nanosecond},
	})
	require.NoError(t, err)
	require.Zero(t, res.Stale+res.Unpublished)

	// Fix the cause, redrive: processed once. A second redrive moves nothing new.
	broken.Store(false)
	moved, err := b.ops.Redrive(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, moved)
	b.waitStatus(t, r.ID, reservation.StatusHeld)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM holds WHERE request_id = $1`, r.ID))
	require.Zero(t, b.count(t, `SELECT count(*) FROM reservation_requests WHERE dead_lettered_at IS NOT NULL`))
	b.env.RequireInvariants(t)
}

func TestConsumerStoppedMidBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inClaim := make(chan struct{}, 1)
	b.env.Claimer.BeforeCommit = func(ctx context.Context) error {
		select {
		case inClaim <- struct{}{}:
		default:
		}
		<-ctx.Done() // the consumer is stopped while the claim is open
		return ctx.Err()
	}
	var ids []uuid.UUID
	for i := range 5 {
		ids = append(ids, b.reserve(t, fmt.Sprintf("b%d", i), reservation.Params{Quantity: 1}).ID)
	}
	stop := b.consume(t)
	<-inClaim
	stop()
	require.Zero(t, b.count(t, `SELECT count(*) FROM claims`), "nothing committed")

	b.env.Claimer.BeforeCommit = nil
	b.consume(t) // the messages come back after the visibility timeout
	for _, id := range ids {
		b.waitStatus(t, id, reservation.StatusHeld)
	}
	b.queueEmpty(t)
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM holds`))
	b.env.RequireInvariants(t)
}

func TestVisibilityExtendedForLongBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	b.env.Claimer.BeforeCommit = func(context.Context) error {
		if calls.Add(1) == 1 {
			time.Sleep(2500 * time.Millisecond) // longer than the 1s visibility timeout
		}
		return nil
	}
	r := b.reserve(t, "alice", reservation.Params{Quantity: 1})
	b.consume(t)
	b.waitStatus(t, r.ID, reservation.StatusHeld)
	b.queueEmpty(t)
	require.Equal(t, int32(1), calls.Load(), "kept invisible: no second delivery reached the claim")
}

// With the SQS backend the outbox relay publishes to the events queue, marks
// the rows published, and the consumer hands every event on.
func TestOutboxToEventsQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client, eventsURL, _ := testfix.SQS(t, 3, time.Second)
	events := sqsqueue.NewEvents(client, eventsURL, b.env.Logger)
	r := b.reserve(t, "alice", reservation.Params{Quantity: 1})
	b.consume(t)
	b.waitStatus(t, r.ID, reservation.StatusHeld) // the claim wrote a holds.created row

	n, err := jobs.RelayToQueue(context.Background(), b.env.Schema.Pool, events, b.env.River)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, b.count(t, `SELECT count(*) FROM outbox WHERE published_at IS NULL`))
	n, err = jobs.RelayToQueue(context.Background(), b.env.Schema.Pool, events, b.env.River)
	require.NoError(t, err)
	require.Zero(t, n, "nothing twice")

	got := make(chan outbox.Event, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		workers.ConsumeEvents(ctx, events, time.Second, func(_ context.Context, ev outbox.Event) error { got <- ev; return nil }, b.env.Logger)
	}()
	ev := <-got
	cancel()
	<-done
	require.Equal(t, "holds.created", ev.Topic)
	require.Equal(t, b.product.TenantID, ev.TenantID)
	require.Contains(t, string(ev.Payload), r.ID.String())
}
