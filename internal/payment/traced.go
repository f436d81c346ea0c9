package payment

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"boxoffice/internal/tracing"
)

// Traced wraps a provider so that each call is a client span: which call,
// at which provider, with which idempotency key, and what came back.
func Traced(p Provider, tp trace.TracerProvider) Provider {
	return &traced{p: p, tracer: tracing.Tracer(tp)}
}

type traced struct {
	p      Provider
	tracer trace.Tracer
}

func (t *traced) Name() string { return t.p.Name() }

// call runs one provider call in its span; result names what came back.
func call[T any](t *traced, ctx context.Context, op, key string, do func(context.Context) (T, error),
	result func(T) []attribute.KeyValue, attrs ...attribute.KeyValue) (T, error) {
	ctx, span := t.tracer.Start(ctx, "payment."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, attribute.String("payment.provider", t.p.Name()),
			attribute.String("payment.idempotency_key", key))...))
	defer span.End()
	v, err := do(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return v, err
	}
	span.SetAttributes(result(v)...)
	return v, nil
}

func paid(p Payment) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("payment.id", p.ID), attribute.String("payment.status", p.Status)}
}

func refunded(r Refund) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("refund.id", r.ID), attribute.String("refund.status", r.Status)}
}

func (t *traced) Authorize(ctx context.Context, r AuthorizeRequest) (Payment, error) {
	return call(t, ctx, "authorize", r.Key, func(ctx context.Context) (Payment, error) { return t.p.Authorize(ctx, r) }, paid,
		attribute.Int64("payment.amount_cents", r.AmountCents), attribute.String("payment.currency", r.Currency),
		attribute.String("order.id", r.OrderID))
}

func (t *traced) Get(ctx context.Context, key string) (Payment, error) {
	return call(t, ctx, "get", key, func(ctx context.Context) (Payment, error) { return t.p.Get(ctx, key) }, paid)
}

func (t *traced) Capture(ctx context.Context, paymentID, key string) (Payment, error) {
	return call(t, ctx, "capture", key, func(ctx context.Context) (Payment, error) { return t.p.Capture(ctx, paymentID, key) }, paid)
}

func (t *traced) Void(ctx context.Context, paymentID, key string) (Payment, error) {
	return call(t, ctx, "void", key, func(ctx context.Context) (Payment, error) { return t.p.Void(ctx, paymentID, key) }, paid)
}

func (t *traced) Refund(ctx context.Context, r RefundRequest) (Refund, error) {
	return call(t, ctx, "refund", r.Key, func(ctx context.Context) (Refund, error) { return t.p.Refund(ctx, r) }, refunded,
		attribute.String("payment.id", r.PaymentID), attribute.Int64("refund.amount_cents", r.AmountCents))
}

func (t *traced) GetRefund(ctx context.Context, key string) (Refund, error) {
	return call(t, ctx, "get_refund", key, func(ctx context.Context) (Refund, error) { return t.p.GetRefund(ctx, key) }, refunded)
}

// Unwrap returns the traced provider.
func (t *traced) Unwrap() Provider { return t.p }

// Unwrap returns the provider under any wrapping (Traced), to ask what it
// can do beyond Provider (WebhookParser).
func Unwrap(p Provider) Provider {
	for {
		w, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			return p
		}
		p = w.Unwrap()
	}
}
