package sqsqueue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/reservation"
)

// Ops are the operator's views of and actions on the queues.
type Ops struct {
	client *sqs.Client
	cfg    Config
	pool   *pgxpool.Pool
}

// NewOps returns the operations on cfg's queues.
func NewOps(client *sqs.Client, cfg Config, pool *pgxpool.Pool) *Ops {
	cfg.setDefaults()
	return &Ops{client: client, cfg: cfg, pool: pool}
}

// QueueStats are SQS's approximate counts for one queue.
type QueueStats struct {
	URL        string `json:"url"`
	Visible    int    `json:"visible" doc:"ApproximateNumberOfMessages"`
	NotVisible int    `json:"notVisible" doc:"ApproximateNumberOfMessagesNotVisible (in flight)"`
	Delayed    int    `json:"delayed" doc:"ApproximateNumberOfMessagesDelayed"`
	// OldestAgeSeconds is the age of the oldest message: for the main queue
	// the oldest published request still QUEUED (SQS has no cheap way to tell),
	// for the dead-letter queue the oldest message seen when peeking.
	OldestAgeSeconds float64 `json:"oldestAgeSeconds"`
}

// Stats reads both queues' counts.
func (o *Ops) Stats(ctx context.Context) (mainQ, dlq QueueStats, err error) {
	if mainQ, err = o.attributes(ctx, o.cfg.QueueURL); err != nil {
		return mainQ, dlq, err
	}
	if dlq, err = o.attributes(ctx, o.cfg.DLQURL); err != nil {
		return mainQ, dlq, err
	}
	oldest, err := reservation.OldestEnqueued(ctx, o.pool)
	if err != nil {
		return mainQ, dlq, err
	}
	if oldest != nil {
		mainQ.OldestAgeSeconds = time.Since(*oldest).Seconds()
	}
	if dlq.Visible > 0 {
		msgs, err := o.PeekDLQ(ctx, MaxBatch)
		if err != nil {
			return mainQ, dlq, err
		}
		for _, m := range msgs {
			dlq.OldestAgeSeconds = max(dlq.OldestAgeSeconds, time.Since(m.SentAt).Seconds())
		}
	}
	return mainQ, dlq, nil
}

func (o *Ops) attributes(ctx context.Context, url string) (QueueStats, error) {
	out, err := o.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return QueueStats{}, fmt.Errorf("queue attributes of %s: %w", url, err)
	}
	n := func(name types.QueueAttributeName) int {
		v, _ := strconv.Atoi(out.Attributes[string(name)])
		return v
	}
	return QueueStats{
		URL:        url,
		Visible:    n(types.QueueAttributeNameApproximateNumberOfMessages),
		NotVisible: n(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:    n(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
	}, nil
}

// DLQMessage is a dead-lettered message as an operator sees it.
type DLQMessage struct {
	MessageID string           `json:"messageId"`
	Request   *reservation.Ref `json:"request,omitempty" doc:"The request it carries; absent when the body is not one"`
	Body      string           `json:"body"`
	SentAt    time.Time        `json:"sentAt"`
}

// peekVisibility hides peeked messages only while a peek collects them.
const peekVisibility = 5 * time.Second

// PeekDLQ returns up to limit dead-lettered messages without consuming them:
// they are received with a short visibility timeout and released at once.
func (o *Ops) PeekDLQ(ctx context.Context, limit int) ([]DLQMessage, error) {
	var out []DLQMessage
	var handles []types.Message
	defer func() { o.release(context.WithoutCancel(ctx), handles) }()
	seen := map[string]bool{}
	for len(out) < limit {
		res, err := o.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(o.cfg.DLQURL),
			MaxNumberOfMessages: int32(min(MaxBatch, limit-len(out))),
			VisibilityTimeout:   int32(peekVisibility.Seconds()),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{
				types.MessageSystemAttributeNameSentTimestamp,
			},
		})
		if err != nil {
			return nil, fmt.Errorf("peek dead-letter queue: %w", err)
		}
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			handles = append(handles, m)
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue
			}
			seen[id] = true
			dm := DLQMessage{MessageID: id, Body: aws.ToString(m.Body)}
			if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
				dm.SentAt = time.UnixMilli(ms).UTC()
			}
			if ref, err := Decode(dm.Body); err == nil {
				dm.Request = &ref
			}
			out = append(out, dm)
		}
	}
	return out, nil
}

// release makes peeked messages visible again.
func (o *Ops) release(ctx context.Context, msgs []types.Message) {
	for start := 0; start < len(msgs); start += MaxBatch {
		var entries []types.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range msgs[start:min(start+MaxBatch, len(msgs))] {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			})
		}
		_, _ = o.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(o.cfg.DLQURL), Entries: entries,
		}) // best effort: unreleased messages reappear after peekVisibility
	}
}

// Redrive moves every dead-lettered message back to the main queue and
// clears the requests' dead-letter mark, returning how many moved. A message
// is deleted from the dead-letter queue only after it is sent, so a failure
// half-way duplicates at worst, which consumers absorb; a second call finds
// the dead-letter queue empty and moves nothing.
func (o *Ops) Redrive(ctx context.Context) (int, error) {
	moved := 0
	for {
		res, err := o.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(o.cfg.DLQURL), MaxNumberOfMessages: MaxBatch,
			VisibilityTimeout: int32(o.cfg.VisibilityTimeout.Seconds()),
		})
		if err != nil {
			return moved, fmt.Errorf("receive from dead-letter queue: %w", err)
		}
		if len(res.Messages) == 0 {
			return moved, nil
		}
		entries := make([]types.SendMessageBatchRequestEntry, len(res.Messages))
		for i, m := range res.Messages {
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body}
		}
		sent, err := o.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(o.cfg.QueueURL), Entries: entries})
		if err != nil {
			return moved, fmt.Errorf("send to main queue: %w", err)
		}
		var done []types.Message
		var ids []uuid.UUID
		for _, s := range sent.Successful {
			i, _ := strconv.Atoi(aws.ToString(s.Id))
			m := res.Messages[i]
			done = append(done, m)
			if ref, err := Decode(aws.ToString(m.Body)); err == nil {
				ids = append(ids, ref.ID)
			}
		}
		if err := DeleteMessages(ctx, o.client, o.cfg.DLQURL, done); err != nil {
			return moved, err
		}
		if len(ids) > 0 {
			if err := reservation.SetDeadLettered(ctx, o.pool, ids, false); err != nil {
				return moved, err
			}
		}
		moved += len(done)
		if err := batchErr("send to main queue", sent.Failed); err != nil {
			return moved, err
		}
	}
}
