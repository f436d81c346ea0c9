package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

func TestOpsQueuesAndKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{}) // no workers: requests stay QUEUED, claim jobs available
	other := b.env.NewTenant(t)
	otherProduct := b.env.Product(t, testfix.ProductOpts{Tenant: other.ID})
	for range 3 {
		b.env.Reserve(t, b.product, "alice-"+uuid.NewString(), reservation.Params{Quantity: 1})
	}
	for range 2 {
		b.env.Reserve(t, otherProduct, "bob-"+uuid.NewString(), reservation.Params{Quantity: 1})
	}

	// Keys: the admin issues an operator key; a tenant admin for its own tenant only.
	r := b.do(t, http.MethodPost, "/v1/tenants/"+b.env.Tenant.ID.String()+"/api-keys", adminKey, map[string]any{"role": "operator"})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	opKey := r.body["apiKey"].(string)
	r = b.do(t, http.MethodPost, "/v1/tenants/"+other.ID.String()+"/api-keys", other.APIKey, map[string]any{"role": "operator"})
	require.Equal(t, http.StatusCreated, r.status)
	otherOpKey := r.body["apiKey"].(string)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants/"+other.ID.String()+"/api-keys", b.env.Tenant.APIKey,
		map[string]any{"role": "operator"}), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants/"+uuid.NewString()+"/api-keys", adminKey,
		map[string]any{"role": "operator"}), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants/"+b.env.Tenant.ID.String()+"/api-keys", opKey,
		map[string]any{"role": "tenant-admin"}), 403, "FORBIDDEN")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants/"+b.env.Tenant.ID.String()+"/api-keys", adminKey,
		map[string]any{"role": "root"}), 422, "VALIDATION_FAILED")

	// An operator key may watch but not administer.
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products", opKey, nil), 403, "FORBIDDEN")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/queues", b.buyer, nil), 401, "UNAUTHORIZED")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/queues", "", nil), 401, "UNAUTHORIZED")

	queue := func(body map[string]any, name string) map[string]any {
		for _, q := range body["river"].([]any) {
			if q.(map[string]any)["name"] == name {
				return q.(map[string]any)
			}
		}
		t.Fatalf("queue %s missing in %v", name, body)
		return nil
	}
	r = b.do(t, http.MethodGet, "/v1/ops/queues", opKey, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "river", r.body["backend"])
	require.EqualValues(t, 3, r.body["requests"].(map[string]any)["byStatus"].(map[string]any)["QUEUED"])
	require.EqualValues(t, 1, queue(r.body, "claims")["available"], "one claim job for the tenant's one product")
	require.Nil(t, r.body["sqs"])

	r = b.do(t, http.MethodGet, "/v1/ops/queues", b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusOK, r.status, "tenant admins may watch too")

	r = b.do(t, http.MethodGet, "/v1/ops/queues", adminKey, nil)
	require.EqualValues(t, 5, r.body["requests"].(map[string]any)["byStatus"].(map[string]any)["QUEUED"])
	require.EqualValues(t, 2, queue(r.body, "claims")["available"])
	require.Greater(t, r.body["requests"].(map[string]any)["oldestQueuedAgeSeconds"], 0.0)

	// Discarded jobs: the tenant sees its own, retry is the admin's.
	b.env.Exec(t, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE kind = 'claim_product'`)
	jobs := func(key string) []any {
		r := b.do(t, http.MethodGet, "/v1/ops/river/discarded", key, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		return r.body["jobs"].([]any)
	}
	require.Len(t, jobs(adminKey), 2)
	mine := jobs(opKey)
	require.Len(t, mine, 1)
	require.Len(t, jobs(otherOpKey), 1)
	id := int64(mine[0].(map[string]any)["id"].(float64))
	path := "/v1/ops/river/jobs/" + itoa(id) + "/retry"
	requireProblem(t, b.do(t, http.MethodPost, path, opKey, nil), 403, "FORBIDDEN")
	r = b.do(t, http.MethodPost, path, adminKey, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "available", r.body["state"])
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/river/jobs/999999/retry", adminKey, nil), 404, "NOT_FOUND")

	// The River backend has no dead-letter queue.
	r = b.do(t, http.MethodGet, "/v1/ops/dlq", adminKey, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Empty(t, r.body["messages"])
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/dlq/redrive", adminKey, nil), 409, "NO_DEAD_LETTER_QUEUE")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/dlq/redrive", opKey, nil), 403, "FORBIDDEN")

	// River UI: platform admin only, by Basic auth or Bearer.
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/ops/river/", "", nil).status)
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/ops/river/", opKey, nil).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/ops/river/", adminKey, nil).status)
	// Cached Basic credentials must not let another site change jobs: a
	// text/plain or cross-origin POST is refused before River UI sees it.
	retry := "/ops/river/api/jobs/retry"
	creds := basic("ops", adminKey)
	requireProblem(t, b.do(t, http.MethodPost, retry, "", `{"ids":["1"]}`, "Authorization", creds, "Content-Type", "text/plain"), 403, "CROSS_SITE_REQUEST")
	requireProblem(t, b.do(t, http.MethodPost, retry, "", map[string]any{"ids": []string{"1"}}, "Authorization", creds,
		"Origin", "https://evil.example"), 403, "CROSS_SITE_REQUEST")
	requireProblem(t, b.do(t, http.MethodPost, retry, "", map[string]any{"ids": []string{"1"}}, "Authorization", creds,
		"Sec-Fetch-Site", "cross-site"), 403, "CROSS_SITE_REQUEST")
	same := b.do(t, http.MethodPost, retry, "", map[string]any{"ids": []string{"1"}}, "Authorization", creds, "Origin", "http://example.com")
	require.NotEqual(t, http.StatusForbidden, same.status, "the UI's own JSON calls pass: %s", same.raw)
	r = b.do(t, http.MethodGet, "/ops/river/api/jobs?state=available", "", nil, "Authorization", basic("ops", adminKey))
	require.Equal(t, http.StatusOK, r.status, string(r.raw))

	// The same figures as gauges.
	m := b.scrape(t)
	require.Contains(t, m, `boxoffice_requests{status="QUEUED"} 5`)
	require.Contains(t, m, `boxoffice_river_jobs{queue="claims",state="available"} 1`)
	require.Contains(t, m, `boxoffice_river_jobs{queue="claims",state="discarded"} 1`)
}

func TestOpsDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, mainURL, dlqURL := testfix.SQS(t, 1, time.Second)
	cfg := sqsqueue.Config{QueueURL: mainURL, DLQURL: dlqURL, MaxReceiveCount: 1, VisibilityTimeout: time.Second}
	b := setupWithDLQ(t, testfix.Options{}, func(pool *pgxpool.Pool) *sqsqueue.Ops { return sqsqueue.NewOps(client, cfg, pool) })
	other := b.env.NewTenant(t)
	_, opKey, err := b.env.Tenants.CreateKey(ctx, b.env.Tenant.ID, "operator", "")
	require.NoError(t, err)
	_, otherOpKey, err := b.env.Tenants.CreateKey(ctx, other.ID, "operator", "")
	require.NoError(t, err)

	// Two messages dead-lettered by hand: receive once (maxReceiveCount 1) and let them time out.
	mine := sqsqueue.NewRefBody(reservation.Ref{ID: uuid.New(), ProductID: b.product.ID, TenantID: b.env.Tenant.ID})
	for _, body := range []string{mine, "garbage"} {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(mainURL), MessageBody: aws.String(body)})
		require.NoError(t, err)
	}
	_, err = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(mainURL), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, _ = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(mainURL), MaxNumberOfMessages: 10})
		r := b.do(c, http.MethodGet, "/v1/ops/dlq", adminKey, nil)
		assert.Len(c, r.body["messages"], 2)
	}, 10*time.Second, 200*time.Millisecond)

	require.Len(t, b.do(t, http.MethodGet, "/v1/ops/dlq", opKey, nil).body["messages"], 1, "a tenant sees its own")
	require.Empty(t, b.do(t, http.MethodGet, "/v1/ops/dlq", otherOpKey, nil).body["messages"])
	r := b.do(t, http.MethodGet, "/v1/ops/queues", adminKey, nil)
	dlq := r.body["sqs"].(map[string]any)["dlq"].(map[string]any)
	// Peeked messages count as in flight until the emulator requeues them.
	require.EqualValues(t, 2, dlq["visible"].(float64)+dlq["notVisible"].(float64))
	require.Nil(t, b.do(t, http.MethodGet, "/v1/ops/queues", opKey, nil).body["sqs"], "shared queues are the platform's")

	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/dlq/redrive", opKey, nil), 403, "FORBIDDEN")
	r = b.do(t, http.MethodPost, "/v1/ops/dlq/redrive", adminKey, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.EqualValues(t, 2, r.body["moved"])
	r = b.do(t, http.MethodPost, "/v1/ops/dlq/redrive", adminKey, nil)
	require.EqualValues(t, 0, r.body["moved"], "safe to call twice")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// A product with a waiting room once made every scrape fail (a gauge without
// a descriptor panicked the collector): the room's depth is now a series,
// and the process's own counters survive any collector fault.
func TestMetricsWithWaitingRoom(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 10,
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 5, ShoppingSeconds: 60}})
	m := b.scrape(t)
	require.Contains(t, m, fmt.Sprintf(`boxoffice_waiting_room_depth{product="%s"} 0`, p.ID))
	require.Contains(t, m, "boxoffice_invariant_violations_total 0")
	// What the alert rules watch is there, from the scrape's first second.
	for _, gauge := range []string{"boxoffice_payments_unresolved 0", "boxoffice_payments_oldest_unresolved_age_seconds 0",
		"boxoffice_holds_expiry_backlog_seconds 0", "boxoffice_outbox_lag_seconds"} {
		require.Contains(t, m, gauge)
	}
}
