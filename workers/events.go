package workers

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"boxoffice/internal/outbox"
	"boxoffice/internal/sqsqueue"
)

// ConsumeEvents long-polls the SQS events queue until ctx ends, deleting
// each message once handle has succeeded; a failing event is redelivered
// and, after the queue's maxReceiveCount, dead-lettered.
func ConsumeEvents(ctx context.Context, events *sqsqueue.Events, wait time.Duration,
	handle func(context.Context, outbox.Event) error, logger *slog.Logger) {
	client, queueURL := events.Client(), events.QueueURL()
	for ctx.Err() == nil {
		res, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: sqsqueue.MaxBatch, WaitTimeSeconds: int32(wait.Seconds()),
		})
		if err != nil {
			if ctx.Err() == nil {
				logger.WarnContext(ctx, "receive events failed", "error", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		var done []types.Message
		for _, m := range res.Messages {
			var ev outbox.Event
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
				logger.ErrorContext(ctx, "undecodable event", "message", aws.ToString(m.MessageId), "error", err)
				continue
			}
			if err := handle(ctx, ev); err != nil {
				logger.WarnContext(ctx, "event handler failed; it will be redelivered", "event", ev.ID, "topic", ev.Topic, "error", err)
				continue
			}
			done = append(done, m)
		}
		if err := sqsqueue.DeleteMessages(context.WithoutCancel(ctx), client, queueURL, done); err != nil {
			logger.WarnContext(ctx, "delete events failed", "error", err)
		}
	}
}
