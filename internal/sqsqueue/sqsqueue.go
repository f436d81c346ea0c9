// Package sqsqueue is BoxOffice's side of Amazon SQS: the client and queues,
// the message codec, the publisher that batches accepted requests into
// SendMessageBatch calls, the events queue the outbox relay publishes to,
// and the operator's dead-letter tools. The consumers of both queues live in
// workers, with River's.
package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"boxoffice/internal/awsconf"
	"boxoffice/internal/reservation"
)

// Config names the queues and tunes the consumer. Zero values take the
// defaults noted on each field.
type Config struct {
	// QueueURL and DLQURL are the main queue and its dead-letter queue.
	QueueURL string
	DLQURL   string
	// MaxReceiveCount is the redrive policy's receive count (default 5). The
	// consumer uses it to tell when a failing message is about to move to
	// the dead-letter queue.
	MaxReceiveCount int
	// VisibilityTimeout of received messages (default 30s); the consumer
	// extends it while a batch runs long.
	VisibilityTimeout time.Duration
	// WaitTime is the long-poll wait (default 20s, at most 20s).
	WaitTime time.Duration
	// Pollers is how many ReceiveMessage loops run at once (default 4).
	Pollers int
	// Workers is how many products are claimed at once (default 8).
	Workers int
	// BatchSize caps the requests of one claim transaction (default 1000).
	BatchSize int
	// Linger is how long the consumer gathers a product's messages before
	// claiming them when fewer than BatchSize are waiting (default 5ms).
	Linger time.Duration
	// MaxInFlight caps messages received and not yet finished (default
	// 2 × BatchSize): pollers pause rather than hold messages whose
	// visibility would run out before a worker reaches them.
	MaxInFlight int
}

// WithDefaults returns the configuration with its zero values defaulted.
func (c Config) WithDefaults() Config {
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	if c.MaxReceiveCount == 0 {
		c.MaxReceiveCount = 5
	}
	if c.VisibilityTimeout == 0 {
		c.VisibilityTimeout = 30 * time.Second
	}
	if c.WaitTime == 0 {
		c.WaitTime = 20 * time.Second
	}
	c.WaitTime = min(c.WaitTime, 20*time.Second)
	if c.Pollers == 0 {
		c.Pollers = 4
	}
	if c.Workers == 0 {
		c.Workers = 8
	}
	if c.BatchSize == 0 {
		c.BatchSize = 1000
	}
	if c.Linger == 0 {
		c.Linger = 5 * time.Millisecond
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 2 * c.BatchSize
	}
	c.MaxInFlight = max(c.MaxInFlight, MaxBatch)
}

// NewClient returns an SQS client from the standard AWS configuration
// (region, credential chain). A non-empty endpoint overrides the service
// address — the in-process emulator in development and tests, which also
// gets static dummy credentials when none are configured.
func NewClient(ctx context.Context, endpoint, region string) (*sqs.Client, error) {
	cfg, err := awsconf.Load(ctx, endpoint, region, nil)
	if err != nil {
		return nil, err
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// EnsureQueues creates (or finds) the main queue name and its dead-letter
// queue name+"-dlq" with a redrive policy, and returns their URLs. Used in
// development and tests; production queues come from infra/.
func EnsureQueues(ctx context.Context, client *sqs.Client, name string, maxReceiveCount int, visibility time.Duration) (mainURL, dlqURL string, err error) {
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		return "", "", fmt.Errorf("create dead-letter queue: %w", err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("dead-letter queue arn: %w", err)
	}
	policy, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(maxReceiveCount),
	})
	main, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			string(types.QueueAttributeNameRedrivePolicy):     string(policy),
			string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(visibility.Seconds())),
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("create queue: %w", err)
	}
	return *main.QueueUrl, *dlq.QueueUrl, nil
}

// NewRefBody is the message body that carries a request (for tools and tests).
func NewRefBody(ref reservation.Ref) string { return encode(ref) }

// encode is the message body of a request.
func encode(ref reservation.Ref) string {
	b, _ := json.Marshal(ref) // a struct of UUIDs always encodes
	return string(b)
}

// Decode reads a message body; a body that is not a request is poison.
func Decode(body string) (reservation.Ref, error) {
	var ref reservation.Ref
	if err := json.Unmarshal([]byte(body), &ref); err != nil {
		return ref, fmt.Errorf("message body: %w", err)
	}
	if ref.ID == [16]byte{} || ref.ProductID == [16]byte{} {
		return ref, errors.New("message body: requestId and productId are required")
	}
	return ref, nil
}

// batchErr summarises the failed entries of a batch call.
func batchErr(op string, failed []types.BatchResultErrorEntry) error {
	if len(failed) == 0 {
		return nil
	}
	f := failed[0]
	return fmt.Errorf("%s: %d entries failed, first %s: %s", op, len(failed), aws.ToString(f.Code), aws.ToString(f.Message))
}

// DeleteMessages deletes messages in batches of ten, the batches at once.
func DeleteMessages(ctx context.Context, client *sqs.Client, queueURL string, msgs []types.Message) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(msgs)/MaxBatch+1)
	for start := 0; start < len(msgs); start += MaxBatch {
		chunk := msgs[start:min(start+MaxBatch, len(msgs))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
			for i, m := range chunk {
				entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
			}
			out, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
			if err != nil {
				errs <- fmt.Errorf("delete message batch: %w", err)
				return
			}
			if err := batchErr("delete message batch", out.Failed); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // the first failure, if any
}
