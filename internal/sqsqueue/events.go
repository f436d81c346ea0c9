package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"boxoffice/internal/outbox"
)

// Events is the SQS events queue: the outbox relay publishes to it when the
// SQS backend is on, and Consume hands each event to a handler.
type Events struct {
	client   *sqs.Client
	queueURL string
	logger   *slog.Logger
}

// NewEvents returns the events queue at queueURL.
func NewEvents(client *sqs.Client, queueURL string, logger *slog.Logger) *Events {
	return &Events{client: client, queueURL: queueURL, logger: logger}
}

// PublishEvents sends events in batches of ten.
func (e *Events) PublishEvents(ctx context.Context, events []outbox.Event) error {
	for start := 0; start < len(events); start += maxBatch {
		chunk := events[start:min(start+maxBatch, len(events))]
		entries := make([]types.SendMessageBatchRequestEntry, len(chunk))
		for i, ev := range chunk {
			body, _ := json.Marshal(ev)
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))}
		}
		out, err := e.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(e.queueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("publish events: %w", err)
		}
		if err := batchErr("publish events", out.Failed); err != nil {
			return err
		}
	}
	return nil
}

// Consume long-polls the events queue until ctx ends, deleting each message
// once handle has succeeded; a failing event is redelivered and, after the
// queue's maxReceiveCount, dead-lettered.
func (e *Events) Consume(ctx context.Context, wait time.Duration, handle func(context.Context, outbox.Event) error) {
	for ctx.Err() == nil {
		res, err := e.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: maxBatch, WaitTimeSeconds: int32(wait.Seconds()),
		})
		if err != nil {
			if ctx.Err() == nil {
				e.logger.WarnContext(ctx, "receive events failed", "error", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		var done []types.Message
		for _, m := range res.Messages {
			var ev outbox.Event
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
				e.logger.ErrorContext(ctx, "undecodable event", "message", aws.ToString(m.MessageId), "error", err)
				continue
			}
			if err := handle(ctx, ev); err != nil {
				e.logger.WarnContext(ctx, "event handler failed; it will be redelivered", "event", ev.ID, "topic", ev.Topic, "error", err)
				continue
			}
			done = append(done, m)
		}
		if err := deleteMessages(context.WithoutCancel(ctx), e.client, e.queueURL, done); err != nil {
			e.logger.WarnContext(ctx, "delete events failed", "error", err)
		}
	}
}
