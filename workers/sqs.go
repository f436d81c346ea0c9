package workers

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"boxoffice/internal/metrics"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/tracing"
)

// SQSConsumer drains the main queue: pollers long-poll for messages, a
// dispatcher groups them by product, and each group is decided by one claim
// transaction (the same Claimer the River worker uses). Messages are deleted
// only after the claim has committed; a redelivered message whose request is
// already decided is simply deleted. While a product's claim runs, its new
// messages gather for the next one, so batches grow with the load.
type SQSConsumer struct {
	client   *sqs.Client
	cfg      sqsqueue.Config
	claimer  *reservation.Claimer
	pool     *pgxpool.Pool
	logger   *slog.Logger
	inFlight *semaphore.Weighted // messages received and not yet finished
	// Metrics, when set, counts messages put back early.
	Metrics *metrics.Metrics
	// Tracer traces each claim of received messages (default: none).
	Tracer trace.Tracer
}

// NewSQSConsumer returns a consumer of cfg.QueueURL.
func NewSQSConsumer(client *sqs.Client, cfg sqsqueue.Config, claimer *reservation.Claimer, pool *pgxpool.Pool, logger *slog.Logger) *SQSConsumer {
	cfg = cfg.WithDefaults()
	return &SQSConsumer{client: client, cfg: cfg, claimer: claimer, pool: pool, logger: logger, Tracer: tracing.Tracer(nil),
		inFlight: semaphore.NewWeighted(int64(cfg.MaxInFlight))}
}

// received is one message with what the consumer learned from it.
type received struct {
	msg          types.Message
	ref          reservation.Ref
	receiveCount int
}

// Run consumes until ctx ends. Claims in flight are then abandoned before
// commit and their messages come back after the visibility timeout.
func (c *SQSConsumer) Run(ctx context.Context) error {
	msgs := make(chan received, c.cfg.Pollers*sqsqueue.MaxBatch)
	var pollers sync.WaitGroup
	for range c.cfg.Pollers {
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			c.poll(ctx, msgs)
		}()
	}
	go func() {
		pollers.Wait()
		close(msgs)
	}()
	c.dispatch(ctx, msgs)
	return nil
}

func (c *SQSConsumer) poll(ctx context.Context, out chan<- received) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := c.inFlight.Acquire(ctx, sqsqueue.MaxBatch); err != nil {
			return
		}
		res, err := c.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(c.cfg.QueueURL),
			MaxNumberOfMessages: sqsqueue.MaxBatch,
			WaitTimeSeconds:     int32(c.cfg.WaitTime.Seconds()),
			VisibilityTimeout:   int32(c.cfg.VisibilityTimeout.Seconds()),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{
				types.MessageSystemAttributeNameApproximateReceiveCount,
			},
			MessageAttributeNames: []string{sqsqueue.TraceAttribute},
		})
		if err != nil {
			c.inFlight.Release(sqsqueue.MaxBatch)
			if ctx.Err() == nil {
				c.logger.WarnContext(ctx, "sqs receive failed", "error", err)
				sleep(ctx, backoff)
				backoff = min(2*backoff, 5*time.Second)
			}
			continue
		}
		backoff = 100 * time.Millisecond
		c.inFlight.Release(int64(sqsqueue.MaxBatch - len(res.Messages)))
		for i, m := range res.Messages {
			ref, err := sqsqueue.Decode(aws.ToString(m.Body))
			if err != nil {
				// Poison: left undeleted, it reaches the dead-letter queue
				// after maxReceiveCount deliveries.
				c.logger.ErrorContext(ctx, "undecodable sqs message", "message", aws.ToString(m.MessageId), "error", err)
				c.inFlight.Release(1)
				continue
			}
			count, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
			select {
			case out <- received{msg: m, ref: ref, receiveCount: count}:
			case <-ctx.Done():
				c.inFlight.Release(int64(len(res.Messages) - i))
				return
			}
		}
	}
}

// dispatch groups messages by product and runs at most one claim per
// product, and at most Workers claims, at a time.
func (c *SQSConsumer) dispatch(ctx context.Context, in <-chan received) {
	pending := map[uuid.UUID][]received{}
	busy := map[uuid.UUID]bool{}
	done := make(chan uuid.UUID)
	sem := make(chan struct{}, c.cfg.Workers)
	var running sync.WaitGroup
	ticker := time.NewTicker(c.cfg.Linger)
	defer ticker.Stop()

	flush := func(product uuid.UUID) {
		if ctx.Err() != nil || busy[product] || len(pending[product]) == 0 {
			return
		}
		batch := pending[product]
		if len(batch) > c.cfg.BatchSize {
			batch, pending[product] = batch[:c.cfg.BatchSize], batch[c.cfg.BatchSize:]
		} else {
			delete(pending, product)
		}
		busy[product] = true
		running.Add(1)
		go func() {
			defer running.Done()
			select {
			case sem <- struct{}{}:
				c.process(ctx, product, batch)
				<-sem
			case <-ctx.Done():
				c.inFlight.Release(int64(len(batch)))
			}
			done <- product
		}()
	}

	for in != nil || len(busy) > 0 {
		select {
		case r, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			pending[r.ref.ProductID] = append(pending[r.ref.ProductID], r)
			if len(pending[r.ref.ProductID]) >= c.cfg.BatchSize {
				flush(r.ref.ProductID)
			}
		case <-ticker.C:
			for product := range pending {
				flush(product)
			}
		case product := <-done:
			delete(busy, product)
			if ctx.Err() != nil {
				c.inFlight.Release(int64(len(pending[product])))
				delete(pending, product)
			}
		}
	}
	running.Wait()
}

// process claims one product's messages and deletes those whose requests
// are decided.
func (c *SQSConsumer) process(ctx context.Context, product uuid.UUID, batch []received) {
	defer c.inFlight.Release(int64(len(batch)))
	stop := c.keepInvisible(ctx, batch)
	defer stop()

	ids := make([]uuid.UUID, 0, len(batch))
	seen := map[uuid.UUID]bool{}
	var links []trace.Link
	for _, r := range batch {
		if !seen[r.ref.ID] {
			seen[r.ref.ID] = true
			ids = append(ids, r.ref.ID)
			if sc := sqsqueue.TraceOf(r.msg); sc.IsValid() && len(links) < 128 {
				links = append(links, trace.Link{SpanContext: sc})
			}
		}
	}
	// One consumer span per claim of received messages, linked to the
	// traces that sent them; the claim transaction's span is its child.
	ctx, span := c.Tracer.Start(ctx, "sqs process", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("messaging.system", "aws_sqs"),
			attribute.String("messaging.destination.name", c.cfg.QueueURL),
			attribute.Int("messaging.batch.message_count", len(batch)), attribute.String("product.id", product.String())))
	defer span.End()
	if _, err := c.claimer.ClaimRequests(ctx, product, ids); err != nil {
		if ctx.Err() == nil {
			c.logger.ErrorContext(ctx, "sqs claim failed; messages will be redelivered", "product", product, "error", err)
			c.markDeadLettered(ctx, batch)
		}
		return
	}
	decided, err := reservation.NotQueued(ctx, c.pool, ids)
	if err != nil {
		c.logger.ErrorContext(ctx, "reading claim outcomes failed", "product", product, "error", err)
		return
	}
	if undecided := undecidedIDs(ids, decided); len(undecided) > 0 {
		// Another transaction held these rows while the claim skipped them
		// (the publisher marking them enqueued, or a duplicate delivery
		// being decided elsewhere). Such locks are short: try once more
		// before handing the messages back.
		sleep(ctx, retryLockedAfter)
		if _, err := c.claimer.ClaimRequests(ctx, product, undecided); err != nil && ctx.Err() == nil {
			c.logger.WarnContext(ctx, "sqs claim retry failed", "product", product, "error", err)
		}
		if decided, err = reservation.NotQueued(ctx, c.pool, ids); err != nil {
			c.logger.ErrorContext(ctx, "reading claim outcomes failed", "product", product, "error", err)
			return
		}
	}
	var del, back []received
	for _, r := range batch {
		if decided[r.ref.ID] {
			del = append(del, r)
		} else {
			back = append(back, r)
		}
	}
	if err := sqsqueue.DeleteMessages(context.WithoutCancel(ctx), c.client, c.cfg.QueueURL, messages(del)); err != nil {
		// Not deleted means redelivered: the next consumer finds the
		// requests decided and deletes them then.
		c.logger.WarnContext(ctx, "sqs delete failed", "product", product, "error", err)
	}
	c.putBack(ctx, product, back)
}

// retryLockedAfter is how long the consumer waits before claiming again the
// requests another transaction had locked.
const retryLockedAfter = 100 * time.Millisecond

// putBack returns messages whose requests are still QUEUED to the queue
// after a short delay instead of the whole visibility timeout, so that a
// request skipped because it was locked is decided within seconds. The
// delay grows with each delivery; the last delivery the redrive policy
// allows keeps its full timeout, so a message is never dead-lettered only
// for having been put back quickly.
func (c *SQSConsumer) putBack(ctx context.Context, product uuid.UUID, back []received) {
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for _, r := range back {
		if r.receiveCount >= c.cfg.MaxReceiveCount-1 {
			continue
		}
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(len(entries))), ReceiptHandle: r.msg.ReceiptHandle,
			VisibilityTimeout: int32(min(r.receiveCount, 5)),
		})
	}
	if len(entries) == 0 {
		return
	}
	c.logger.WarnContext(ctx, "requests still queued after their claim (locked elsewhere); messages put back",
		"product", product, "messages", len(entries))
	c.Metrics.MessagesPutBack(len(entries))
	for start := 0; start < len(entries); start += sqsqueue.MaxBatch {
		chunk := entries[start:min(start+sqsqueue.MaxBatch, len(entries))]
		for i := range chunk {
			chunk[i].Id = aws.String(strconv.Itoa(i))
		}
		_, err := c.client.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(c.cfg.QueueURL), Entries: chunk,
		})
		if err != nil {
			c.logger.WarnContext(ctx, "putting sqs messages back failed; they return after the visibility timeout",
				"product", product, "error", err)
		}
	}
}

func undecidedIDs(ids []uuid.UUID, decided map[uuid.UUID]bool) []uuid.UUID {
	var out []uuid.UUID
	for _, id := range ids {
		if !decided[id] {
			out = append(out, id)
		}
	}
	return out
}

func messages(rs []received) []types.Message {
	out := make([]types.Message, len(rs))
	for i, r := range rs {
		out[i] = r.msg
	}
	return out
}

// markDeadLettered flags the requests whose messages have used their last
// delivery: SQS moves them to the dead-letter queue next, and the repair job
// must leave them to the operator's redrive.
func (c *SQSConsumer) markDeadLettered(ctx context.Context, batch []received) {
	var ids []uuid.UUID
	for _, r := range batch {
		if r.receiveCount >= c.cfg.MaxReceiveCount {
			ids = append(ids, r.ref.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	if err := reservation.SetDeadLettered(ctx, c.pool, ids, true); err != nil {
		c.logger.WarnContext(ctx, "marking dead-lettered requests failed", "error", err)
	}
}

// keepInvisible extends the batch's visibility every half timeout until stop
// is called, so that a long claim is not redelivered to another consumer.
func (c *SQSConsumer) keepInvisible(ctx context.Context, batch []received) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(c.cfg.VisibilityTimeout / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				for start := 0; start < len(batch); start += sqsqueue.MaxBatch {
					var entries []types.ChangeMessageVisibilityBatchRequestEntry
					for i, r := range batch[start:min(start+sqsqueue.MaxBatch, len(batch))] {
						entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
							Id: aws.String(strconv.Itoa(i)), ReceiptHandle: r.msg.ReceiptHandle,
							VisibilityTimeout: int32(c.cfg.VisibilityTimeout.Seconds()),
						})
					}
					_, err := c.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
						QueueUrl: aws.String(c.cfg.QueueURL), Entries: entries,
					})
					if err != nil && ctx.Err() == nil {
						c.logger.WarnContext(ctx, "extending sqs visibility failed", "error", err)
					}
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
