// Package tracing follows a reservation from the request that asked to the
// decision, with OpenTelemetry: the HTTP accept, the queue hop (River job
// metadata, SQS message attributes, and the trace context kept on the
// request's row, which the claim transaction links to), PostgreSQL queries
// and payment provider calls. Traces are exported over OTLP/HTTP when the
// standard OTEL_EXPORTER_OTLP_* variables name an endpoint, and off
// otherwise. Nothing here is global: the provider is passed to what uses it.
package tracing

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of BoxOffice's own spans.
const Name = "boxoffice"

// Setup returns the process's tracer provider and a shutdown that flushes
// it: exporting over OTLP/HTTP when on, a no-op provider otherwise.
func Setup(ctx context.Context, on bool, service string) (trace.TracerProvider, func(context.Context) error, error) {
	if !on {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	// The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS and the
	// rest of the standard variables itself.
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// resource.Default reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(service)), resource.Default())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Enabled reports whether tp records spans (not the no-op provider).
func Enabled(tp trace.TracerProvider) bool {
	if tp == nil {
		return false
	}
	_, isNoop := tp.(noop.TracerProvider)
	return !isNoop
}

// W3C trace context: the traceparent and tracestate headers.
var w3c = propagation.TraceContext{}

// Carrier is a map carrier for trace context (HTTP headers, SQS message
// attributes).
type Carrier = propagation.MapCarrier

// Inject writes ctx's span context into c.
func Inject(ctx context.Context, c Carrier) { w3c.Inject(ctx, c) }

// Extract reads a span context from c into ctx (as the remote parent).
func Extract(ctx context.Context, c Carrier) context.Context { return w3c.Extract(ctx, c) }

// Parent is ctx's span context as a traceparent value ("" without one),
// to keep beside what the span produced.
func Parent(ctx context.Context) string {
	c := Carrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// SpanContextOf parses a traceparent value kept by Parent.
func SpanContextOf(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(w3c.Extract(context.Background(), Carrier{"traceparent": traceparent}))
}

// Tracer returns BoxOffice's tracer from tp (a no-op one when tp is nil).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(Name)
}
