package sqsqueue

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"boxoffice/internal/reservation"
	"boxoffice/internal/tracing"
)

// TraceAttribute is the message attribute that carries a request's trace
// context (a W3C traceparent) beside the message body.
const TraceAttribute = "traceparent"

// traceAttributes are the message attributes of ref: its trace context.
func traceAttributes(ref reservation.Ref) map[string]types.MessageAttributeValue {
	if ref.Trace == nil || *ref.Trace == "" {
		return nil
	}
	return map[string]types.MessageAttributeValue{
		TraceAttribute: {DataType: aws.String("String"), StringValue: ref.Trace},
	}
}

// TraceOf reads a received message's trace context.
func TraceOf(m types.Message) trace.SpanContext {
	if v, ok := m.MessageAttributes[TraceAttribute]; ok {
		return tracing.SpanContextOf(aws.ToString(v.StringValue))
	}
	return trace.SpanContext{}
}

// startSend starts the span of a send of refs to a queue, linked to each
// request's own trace.
func startSend(ctx context.Context, tracer trace.Tracer, queueURL string, refs []reservation.Ref) (context.Context, trace.Span) {
	links := make([]trace.Link, 0, min(len(refs), 128))
	for _, r := range refs[:min(len(refs), 128)] {
		if r.Trace != nil {
			links = append(links, trace.Link{SpanContext: tracing.SpanContextOf(*r.Trace)})
		}
	}
	return tracer.Start(ctx, "sqs send", trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("messaging.system", "aws_sqs"),
			attribute.String("messaging.destination.name", queueURL),
			attribute.Int("messaging.batch.message_count", len(refs))))
}
