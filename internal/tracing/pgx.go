package tracing

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Queries is a pgx tracer: a client span per query, batch and COPY, child
// of whatever span the query's context carries (set it as the pool's
// ConnConfig.Tracer).
type Queries struct {
	tracer trace.Tracer
}

// NewQueries returns the pgx tracer of tp.
func NewQueries(tp trace.TracerProvider) *Queries { return &Queries{tracer: Tracer(tp)} }

var dbSystem = attribute.String("db.system", "postgresql")

// operation is a statement's first word (SELECT, UPDATE…): span names stay
// few, whatever the statement's arguments.
func operation(sql string) string {
	sql = strings.TrimSpace(sql)
	if i := strings.IndexAny(sql, " \n\t("); i > 0 {
		sql = sql[:i]
	}
	return strings.ToUpper(sql)
}

// TraceQueryStart starts a query's span.
func (q *Queries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return ctx // only queries made on behalf of a traced operation
	}
	op := operation(data.SQL)
	ctx, _ = q.tracer.Start(ctx, "db "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(dbSystem, attribute.String("db.operation.name", op), attribute.String("db.query.text", data.SQL)))
	return context.WithValue(ctx, querySpanKey{}, true)
}

// TraceQueryEnd ends it.
func (q *Queries) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	end(ctx, data.Err, attribute.Int64("db.response.rows", data.CommandTag.RowsAffected()))
}

// TraceBatchStart starts a batch's span.
func (q *Queries) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return ctx
	}
	ctx, _ = q.tracer.Start(ctx, "db batch", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(dbSystem, attribute.Int("db.operation.batch.size", data.Batch.Len())))
	return context.WithValue(ctx, querySpanKey{}, true)
}

// TraceBatchQuery is a batch's statement: nothing of its own.
func (q *Queries) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd ends it.
func (q *Queries) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	end(ctx, data.Err)
}

// TraceCopyFromStart starts a COPY's span.
func (q *Queries) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return ctx
	}
	ctx, _ = q.tracer.Start(ctx, "db COPY "+data.TableName.Sanitize(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(dbSystem, attribute.String("db.operation.name", "COPY")))
	return context.WithValue(ctx, querySpanKey{}, true)
}

// TraceCopyFromEnd ends it.
func (q *Queries) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	end(ctx, data.Err, attribute.Int64("db.response.rows", data.CommandTag.RowsAffected()))
}

// end ends the span a Trace*Start put in ctx (none: the query was not
// traced, and the span found is the caller's, which must stay open).
func end(ctx context.Context, err error, attrs ...attribute.KeyValue) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || !isQuerySpan(ctx) {
		return
	}
	span.SetAttributes(attrs...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// isQuerySpan tells a query span from its caller's: a Start returned a
// context with a span of its own only when it traced.
func isQuerySpan(ctx context.Context) bool {
	_, ok := ctx.Value(querySpanKey{}).(bool)
	return ok
}

type querySpanKey struct{}
