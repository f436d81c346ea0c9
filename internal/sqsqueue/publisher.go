package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"boxoffice/internal/reservation"
	"boxoffice/internal/tracing"
)

// MaxBatch is SQS's limit of entries per batch call.
const MaxBatch = 10

// ErrPublisherStopped is returned by Publish once the publisher has stopped.
var ErrPublisherStopped = errors.New("sqs publisher stopped")

// Publisher sends committed requests to the main queue. It is the SQS
// reservation.Enqueuer: SQS cannot join the accept transaction, so requests
// are committed unpublished (enqueued_at NULL), published after commit, and
// marked enqueued once SQS has them. Concurrent publishes are coalesced into
// SendMessageBatch calls of up to 10 entries.
type Publisher struct {
	client   *sqs.Client
	queueURL string
	pool     *pgxpool.Pool
	logger   *slog.Logger
	// Batch coalesces concurrent publishes (default true via NewPublisher);
	// false sends one SendMessage per request, the baseline the benchmark
	// compares against.
	Batch bool
	// Linger is how long the first of a batch waits for company (default 1ms).
	Linger time.Duration
	// Senders is how many batch calls may be in flight at once (default 8).
	Senders int
	// Tracer traces sends (default: none).
	Tracer trace.Tracer

	in        chan pending
	stopped   chan struct{}
	wg        sync.WaitGroup
	startOnce sync.Once
}

type pending struct {
	ref  reservation.Ref
	done chan error
}

// NewPublisher returns a batching publisher; call Start before Publish.
func NewPublisher(client *sqs.Client, queueURL string, pool *pgxpool.Pool, logger *slog.Logger) *Publisher {
	return &Publisher{client: client, queueURL: queueURL, pool: pool, logger: logger, Batch: true,
		Tracer: tracing.Tracer(nil), Linger: time.Millisecond, Senders: 8, in: make(chan pending, 1024), stopped: make(chan struct{})}
}

// Start runs the batching loop until ctx ends; Wait waits for it. Starting
// twice is a no-op, so the API and the repair job can share a publisher.
func (p *Publisher) Start(ctx context.Context) {
	p.startOnce.Do(func() { p.start(ctx) })
}

func (p *Publisher) start(ctx context.Context) {
	batches := make(chan []pending)
	p.wg.Add(1 + p.Senders)
	go func() {
		defer p.wg.Done()
		defer close(batches)
		defer close(p.stopped)
		p.collect(ctx, batches)
	}()
	for range p.Senders {
		go func() {
			defer p.wg.Done()
			for b := range batches {
				p.sendBatch(context.WithoutCancel(ctx), b)
			}
		}()
	}
}

// Wait blocks until the publisher has stopped and its last batches are sent.
func (p *Publisher) Wait() { p.wg.Wait() }

// Run publishes until ctx ends, then waits for the batches in flight.
func (p *Publisher) Run(ctx context.Context) error {
	p.Start(ctx)
	<-ctx.Done()
	p.Wait()
	return nil
}

func (p *Publisher) collect(ctx context.Context, out chan<- []pending) {
	for {
		var first pending
		select {
		case <-ctx.Done():
			for {
				select {
				case x := <-p.in:
					x.done <- ErrPublisherStopped
				default:
					return
				}
			}
		case first = <-p.in:
		}
		batch := []pending{first}
		timer := time.NewTimer(p.Linger)
	fill:
		for len(batch) < MaxBatch {
			select {
			case x := <-p.in:
				batch = append(batch, x)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		out <- batch
	}
}

// Transactional is false: SQS publishes after commit.
func (p *Publisher) Transactional() bool { return false }

// EnqueueTx does nothing: the request is published after commit.
func (p *Publisher) EnqueueTx(context.Context, pgx.Tx, reservation.Ref) error { return nil }

// Publish sends the requests and marks them enqueued, returning the first
// failure. It is safe to publish a request twice: consumers are idempotent.
func (p *Publisher) Publish(ctx context.Context, refs []reservation.Ref) error {
	if !p.Batch {
		var errs []error
		for _, ref := range refs {
			errs = append(errs, p.sendOne(ctx, ref))
		}
		return errors.Join(errs...)
	}
	dones := make([]chan error, len(refs))
	for i, ref := range refs {
		dones[i] = make(chan error, 1)
		select {
		case p.in <- pending{ref: ref, done: dones[i]}:
		case <-p.stopped:
			return ErrPublisherStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var errs []error
	for _, d := range dones {
		select {
		case err := <-d:
			errs = append(errs, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

func (p *Publisher) sendOne(ctx context.Context, ref reservation.Ref) error {
	ctx, span := startSend(ctx, p.Tracer, p.queueURL, []reservation.Ref{ref})
	defer span.End()
	_, err := p.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(p.queueURL), MessageBody: aws.String(encode(ref)),
		MessageAttributes: traceAttributes(ref)})
	if err != nil {
		return fmt.Errorf("send message: %w", err)
	}
	return reservation.MarkEnqueued(ctx, p.pool, []uuid.UUID{ref.ID})
}

func (p *Publisher) sendBatch(ctx context.Context, batch []pending) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	refs := make([]reservation.Ref, len(batch))
	for i, b := range batch {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(encode(b.ref)),
			MessageAttributes: traceAttributes(b.ref)}
		refs[i] = b.ref
	}
	ctx, span := startSend(ctx, p.Tracer, p.queueURL, refs)
	defer span.End()
	errs := make([]error, len(batch))
	out, err := p.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.queueURL), Entries: entries})
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("send message batch: %w", err)
		}
	} else {
		for _, f := range out.Failed {
			if i, convErr := strconv.Atoi(aws.ToString(f.Id)); convErr == nil && i < len(errs) {
				errs[i] = batchErr("send message batch", []types.BatchResultErrorEntry{f})
			}
		}
		var sent []uuid.UUID
		for i, b := range batch {
			if errs[i] == nil {
				sent = append(sent, b.ref.ID)
			}
		}
		if err := reservation.MarkEnqueued(ctx, p.pool, sent); err != nil {
			// The messages are out; the repair job will publish these
			// again and the consumer will see the duplicates as done.
			p.logger.WarnContext(ctx, "marking published requests failed", "error", err)
		}
	}
	for i, b := range batch {
		b.done <- errs[i]
	}
}
