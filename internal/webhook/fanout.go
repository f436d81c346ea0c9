package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/db"
	"boxoffice/internal/outbox"
)

// envelope is a delivery's body: Standard Webhooks' type, timestamp and
// data, and the endpoint's sequence number. Events about one order or
// ticket are written in the order they happened, so their sequence
// numbers increase in that order: a receiver that keeps the last number it
// applied per order can set aside one that arrives late after a retry.
type envelope struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Sequence  int64           `json:"sequence"`
	Data      json.RawMessage `json:"data"`
}

// delivery is a delivery to write.
type delivery struct {
	id         uuid.UUID
	endpointID uuid.UUID
	eventID    *int64
	eventType  string
	sequence   int64
	body       string
}

// Fanout makes, in tx (the outbox relay's), a delivery of each public
// event to every enabled endpoint of its tenant subscribed to its type,
// and the River job that sends it (with client). An event relayed twice
// (the SQS path after a crash) makes no second delivery: the pair
// (endpoint, event) is unique.
func Fanout(ctx context.Context, tx pgx.Tx, client *river.Client[pgx.Tx], events []outbox.Event) error {
	var tenants []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, ev := range events {
		if TypeOf(ev) != "" && !seen[ev.TenantID] {
			seen[ev.TenantID] = true
			tenants = append(tenants, ev.TenantID)
		}
	}
	if len(tenants) == 0 {
		return nil
	}
	// Locked so that the sequence numbers of two relays never interleave.
	rows, err := tx.Query(ctx, `
		SELECT id, tenant_id, event_types, sequence FROM webhook_endpoints
		WHERE enabled AND tenant_id = ANY($1) ORDER BY id FOR UPDATE`, tenants)
	if err != nil {
		return fmt.Errorf("endpoints to fan out to: %w", err)
	}
	type target struct {
		id       uuid.UUID
		types    []string
		sequence int64
	}
	byTenant := map[uuid.UUID][]*target{}
	var tenantID uuid.UUID
	var t target
	_, err = pgx.ForEachRow(rows, []any{&t.id, &tenantID, &t.types, &t.sequence}, func() error {
		c := t
		byTenant[tenantID] = append(byTenant[tenantID], &c)
		return nil
	})
	if err != nil || len(byTenant) == 0 {
		return err
	}
	var out []delivery
	for _, ev := range events {
		typ := TypeOf(ev)
		for _, e := range byTenant[ev.TenantID] {
			if typ == "" || !subscribed(e.types, typ) {
				continue
			}
			e.sequence++
			body, err := json.Marshal(envelope{Type: typ, Timestamp: ev.CreatedAt.UTC(), Sequence: e.sequence, Data: ev.Payload})
			if err != nil {
				return fmt.Errorf("encode %s delivery: %w", typ, err)
			}
			out = append(out, delivery{id: db.NewID(), endpointID: e.id, eventID: &ev.ID, eventType: typ,
				sequence: e.sequence, body: string(body)})
		}
	}
	var ids []uuid.UUID
	var seqs []int64
	for _, targets := range byTenant {
		for _, e := range targets {
			ids, seqs = append(ids, e.id), append(seqs, e.sequence)
		}
	}
	if _, err := tx.Exec(ctx, `
		UPDATE webhook_endpoints e SET sequence = u.sequence FROM unnest($1::uuid[], $2::bigint[]) AS u(id, sequence)
		WHERE e.id = u.id`, ids, seqs); err != nil {
		return fmt.Errorf("advance webhook sequences: %w", err)
	}
	return insert(ctx, tx, client, out)
}

// insert writes deliveries and their jobs (none for a pair already
// delivered).
func insert(ctx context.Context, tx pgx.Tx, client *river.Client[pgx.Tx], ds []delivery) error {
	if len(ds) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(ds))
	endpoints := make([]uuid.UUID, len(ds))
	eventIDs := make([]*int64, len(ds))
	types := make([]string, len(ds))
	seqs := make([]int64, len(ds))
	bodies := make([]string, len(ds))
	for i, d := range ds {
		ids[i], endpoints[i], eventIDs[i], types[i], seqs[i], bodies[i] = d.id, d.endpointID, d.eventID, d.eventType, d.sequence, d.body
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, sequence, body)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::bigint[], $6::text[])
		ON CONFLICT (endpoint_id, event_id) DO NOTHING
		RETURNING id`, ids, endpoints, eventIDs, types, seqs, bodies)
	if err != nil {
		return fmt.Errorf("write webhook deliveries: %w", err)
	}
	made, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return fmt.Errorf("write webhook deliveries: %w", err)
	}
	if len(made) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(made))
	for i, id := range made {
		params[i] = river.InsertManyParams{Args: DeliverArgs{DeliveryID: id}}
	}
	if _, err := client.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("enqueue webhook deliveries: %w", err)
	}
	return nil
}
