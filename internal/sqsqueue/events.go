package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"boxoffice/internal/outbox"
)

// Events is the SQS events queue: the outbox relay publishes to it when the
// SQS backend is on (workers.EventsConsumer consumes it).
type Events struct {
	client   *sqs.Client
	queueURL string
	logger   *slog.Logger
}

// NewEvents returns the events queue at queueURL.
func NewEvents(client *sqs.Client, queueURL string, logger *slog.Logger) *Events {
	return &Events{client: client, queueURL: queueURL, logger: logger}
}

// Client and QueueURL name the queue for its consumer.
func (e *Events) Client() *sqs.Client { return e.client }

// QueueURL is the events queue's URL.
func (e *Events) QueueURL() string { return e.queueURL }

// PublishEvents sends events in batches of ten.
func (e *Events) PublishEvents(ctx context.Context, events []outbox.Event) error {
	for start := 0; start < len(events); start += MaxBatch {
		chunk := events[start:min(start+MaxBatch, len(events))]
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
