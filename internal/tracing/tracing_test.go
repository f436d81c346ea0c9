package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"boxoffice/api"
	"boxoffice/internal/payment"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/tracing"
	"boxoffice/workers"
)

func TestMain(m *testing.M) { testfix.VerifyNoLeaks(m) }

// recorder is an in-memory exporter behind a real SDK provider.
func recorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// attr reads a string attribute.
func attr(kvs []attribute.KeyValue, key string) string {
	set := attribute.NewSet(kvs...)
	v, _ := set.Value(attribute.Key(key))
	return v.AsString()
}

// find returns the ended spans named name.
func find(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// decidedLink finds a claim span's link to a request's trace, with the
// request's outcome.
func decidedLink(spans tracetest.SpanStubs, traceID trace.TraceID, requestID uuid.UUID) (tracetest.SpanStub, string, bool) {
	for _, s := range find(spans, "reservation.claim") {
		for _, l := range s.Links {
			if l.SpanContext.TraceID() != traceID {
				continue
			}
			if attr(l.Attributes, "reservation.request_id") == requestID.String() {
				return s, attr(l.Attributes, "reservation.status"), true
			}
		}
	}
	return tracetest.SpanStub{}, "", false
}

// One reservation's trace, from the caller's span through the API, the
// accept and its queries, River's job and the claim transaction that held
// it.
func TestReservationTraceRiver(t *testing.T) {
	t.Parallel()
	tp, exp := recorder(t)
	env := testfix.New(t, testfix.Options{Work: true, Tracer: tp})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	srv := api.New(api.Deps{Pool: env.App.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, River: env.River, Tracer: tp})

	// The caller's own span: the API continues its trace.
	ctx, caller := tp.Tracer("shopper").Start(context.Background(), "shopper clicks reserve")
	token, err := tenant.SignBuyerToken([]byte(env.Tenant.BuyerTokenSecret), env.Tenant.ID, "ana", time.Hour)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/v1/products/"+p.ID.String()+"/reservations", strings.NewReader(`{"quantity":2}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k1")
	carrier := tracing.Carrier{}
	tracing.Inject(ctx, carrier)
	req.Header.Set("traceparent", carrier["traceparent"])
	resp, err := srv.App().Test(req, 10_000)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	caller.End()
	traceID := caller.SpanContext().TraceID()

	var requestID uuid.UUID
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		spans := exp.GetSpans()
		accept := find(spans, "reservation.accept")
		if !assert.Len(c, accept, 1) {
			return
		}
		requestID = uuid.MustParse(attr(accept[0].Attributes, "reservation.request_id"))
		claim, status, ok := decidedLink(spans, traceID, requestID)
		assert.True(c, ok, "a claim span links to the request")
		assert.Equal(c, reservation.StatusHeld, status)
		// River's work span ends after the drain (which lingers a little).
		assert.True(c, slices.ContainsFunc(spans, func(s tracetest.SpanStub) bool {
			return s.SpanContext.SpanID() == claim.Parent.SpanID()
		}), "the claim's River work span has ended")
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, requestID).Status)

	spans := exp.GetSpans()
	server := find(spans, "POST /v1/products/:id/reservations")
	require.Len(t, server, 1)
	require.Equal(t, traceID, server[0].SpanContext.TraceID(), "the API continues the caller's trace")
	require.Equal(t, caller.SpanContext().SpanID(), server[0].Parent.SpanID())
	require.Equal(t, trace.SpanKindServer, server[0].SpanKind)
	accept := find(spans, "reservation.accept")[0]
	require.Equal(t, server[0].SpanContext.SpanID(), accept.Parent.SpanID())

	// The accept's queries and River's insert are in the request's trace.
	var inserts, riverInsert int
	for _, s := range spans {
		if s.SpanContext.TraceID() != traceID {
			continue
		}
		if s.Name == "db INSERT" || s.Name == "db batch" {
			inserts++
		}
		if strings.HasPrefix(s.Name, "river.insert") {
			riverInsert++
		}
	}
	require.Positive(t, inserts, "the request's INSERT is traced")
	require.Positive(t, riverInsert, "River's job insert is traced")

	// The claim runs inside River's work span, with its own queries.
	claim, _, _ := decidedLink(spans, traceID, requestID)
	work := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		work[s.SpanContext.SpanID()] = s
	}
	parent, ok := work[claim.Parent.SpanID()]
	require.True(t, ok)
	require.Equal(t, "river.work/"+reservation.ClaimArgs{}.Kind(), parent.Name)
	var claimQueries int
	for _, s := range spans {
		if s.Parent.SpanID() == claim.SpanContext.SpanID() && strings.HasPrefix(s.Name, "db ") {
			claimQueries++
		}
	}
	require.Positive(t, claimQueries, "the claim transaction's queries are its children")
}

// With SQS the trace context rides in a message attribute: the send and
// the consumer's claim link back to the request.
func TestReservationTraceSQS(t *testing.T) {
	t.Parallel()
	tp, exp := recorder(t)
	env := testfix.New(t, testfix.Options{Tracer: tp})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	client, mainURL, dlqURL := testfix.SQS(t, 2, time.Second)
	cfg := sqsqueue.Config{QueueURL: mainURL, DLQURL: dlqURL, MaxReceiveCount: 2, VisibilityTimeout: time.Second,
		WaitTime: time.Second, Pollers: 1, Workers: 1, BatchSize: 50}
	ctx, cancel := context.WithCancel(context.Background())
	publisher := sqsqueue.NewPublisher(client, mainURL, env.App.Pool, env.Logger)
	publisher.Tracer = tracing.Tracer(tp)
	publisher.Start(ctx)
	consumer := workers.NewSQSConsumer(client, cfg, env.Claimer, env.App.Pool, env.Logger)
	consumer.Tracer = tracing.Tracer(tp)
	done := make(chan struct{})
	go func() { defer close(done); _ = consumer.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; publisher.Wait() })
	service := reservation.NewService(env.App.Pool, publisher, nil, env.Logger, reservation.ServiceOptions{Tracer: tp})

	rctx, caller := tp.Tracer("shopper").Start(context.Background(), "shopper clicks reserve")
	acc, err := service.Accept(rctx, reservation.AcceptParams{Product: p, BuyerID: "ana", IdempotencyKey: "k1",
		Params: reservation.Params{Quantity: 1}})
	require.NoError(t, err)
	caller.End()
	traceID := caller.SpanContext().TraceID()

	var spans tracetest.SpanStubs
	linked := func(name string) bool {
		for _, s := range find(spans, name) {
			for _, l := range s.Links {
				if l.SpanContext.TraceID() == traceID {
					return true
				}
			}
		}
		return false
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		spans = exp.GetSpans()
		_, status, ok := decidedLink(spans, traceID, acc.Request.ID)
		assert.True(c, ok)
		assert.Equal(c, reservation.StatusHeld, status)
		assert.True(c, linked("sqs send"), "the send links to the request")
		assert.True(c, linked("sqs process"), "the consumer read the trace context from the message attribute")
	}, 20*time.Second, 50*time.Millisecond)
	claim, _, _ := decidedLink(spans, traceID, acc.Request.ID)
	process := find(spans, "sqs process")
	require.Contains(t, []trace.SpanID{process[0].SpanContext.SpanID(), process[len(process)-1].SpanContext.SpanID()},
		claim.Parent.SpanID(), "the claim runs in the consumer's span")
}

// Payment provider calls are client spans of the caller's trace.
func TestPaymentCallsTraced(t *testing.T) {
	t.Parallel()
	tp, exp := recorder(t)
	sim := pspsim.New(pspsim.Config{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	p := payment.Traced(payment.NewSim(srv.URL, 5*time.Second), tp)
	_, isParser := payment.Unwrap(p).(payment.WebhookParser)
	require.True(t, isParser, "the simulator's webhooks are still parsed through the wrapper")

	ctx, root := tp.Tracer("test").Start(context.Background(), "checkout")
	pay, err := p.Authorize(ctx, payment.AuthorizeRequest{Key: "key-1", AmountCents: 500, Currency: "EUR",
		PaymentMethod: pspsim.MethodOK, OrderID: "o1"})
	require.NoError(t, err)
	_, err = p.Capture(ctx, pay.ID, "key-1")
	require.NoError(t, err)
	root.End()
	for _, name := range []string{"payment.authorize", "payment.capture"} {
		s := find(exp.GetSpans(), name)
		require.Len(t, s, 1, name)
		require.Equal(t, root.SpanContext().TraceID(), s[0].SpanContext.TraceID())
		require.Equal(t, trace.SpanKindClient, s[0].SpanKind)
		require.Equal(t, "key-1", attr(s[0].Attributes, "payment.idempotency_key"))
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, spans leave the process over
// OTLP/HTTP to that collector; without it, the provider records nothing.
func TestSetupExportsOverOTLP(t *testing.T) {
	var got atomic.Int64
	var path atomic.Value
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if len(body) > 0 {
			got.Add(1)
			path.Store(r.URL.Path)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	tp, shutdown, err := tracing.Setup(context.Background(), true, "boxoffice")
	require.NoError(t, err)
	require.True(t, tracing.Enabled(tp))
	_, span := tracing.Tracer(tp).Start(context.Background(), "one span")
	span.End()
	require.NoError(t, shutdown(context.Background()), "shutdown flushes")
	require.Positive(t, got.Load(), "the collector received the span")
	require.Equal(t, "/v1/traces", path.Load())

	off, _, err := tracing.Setup(context.Background(), false, "boxoffice")
	require.NoError(t, err)
	require.False(t, tracing.Enabled(off))
	_, span = tracing.Tracer(off).Start(context.Background(), "nothing")
	require.False(t, span.IsRecording())
}
