package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// QueueWebhooks is the River queue of deliveries: apart from claims and
// payments, so a slow endpoint never delays a sale.
const QueueWebhooks = "webhooks"

// retrySteps are the waits between attempts, in units of
// Config.FirstRetry: with 5 s, 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h,
// 4 h, 8 h and 8 h — the eleventh and last attempt about 24 h after the
// first.
var retrySteps = []int{1, 6, 24, 120, 360, 720, 1440, 2880, 5760, 5760}

// DeliverArgs sends one delivery. Manual ones (a redelivery asked for in
// the console) are tried once and sent even if delivered before.
type DeliverArgs struct {
	DeliveryID uuid.UUID `json:"deliveryId"`
	Manual     bool      `json:"manual,omitempty"`
}

func (DeliverArgs) Kind() string { return "deliver_webhook" }

// InsertOpts puts the job on the webhooks queue with its attempts.
func (a DeliverArgs) InsertOpts() river.InsertOpts {
	attempts := len(retrySteps) + 1
	if a.Manual {
		attempts = 1
	}
	return river.InsertOpts{Queue: QueueWebhooks, MaxAttempts: attempts}
}

// DeliverWorker sends deliveries.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	Service *Service
}

// NextRetry follows retrySteps, with up to a tenth more at random so that
// the deliveries that failed together while an endpoint was down do not
// all come back at the same second.
func (w *DeliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	step := retrySteps[min(max(job.Attempt, 1), len(retrySteps))-1]
	wait := time.Duration(step) * w.Service.cfg.FirstRetry
	return time.Now().Add(wait + rand.N(wait/10+1))
}

// Timeout bounds one attempt, its bookkeeping and the alert mail.
func (w *DeliverWorker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return w.Service.cfg.Timeout + 30*time.Second
}

// Work makes one attempt; an error asks River for the next one.
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	return w.Service.attempt(ctx, job.Args, job.Attempt >= job.MaxAttempts)
}

// target is what an attempt needs of its delivery and endpoint.
type target struct {
	endpointID, tenantID uuid.UUID
	url, alertEmail      string
	enabled              bool
	status               string
	body                 []byte
	secrets              []string
}

func (s *Service) target(ctx context.Context, id uuid.UUID) (*target, error) {
	var t target
	var sealed string
	var previous *string
	err := s.pool.QueryRow(ctx, `
		SELECT e.id, e.tenant_id, e.url, e.alert_email, e.enabled, d.status, d.body, e.secret,
		       CASE WHEN e.previous_until > now() THEN e.previous_secret END
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = $1`, id).
		Scan(&t.endpointID, &t.tenantID, &t.url, &t.alertEmail, &t.enabled, &t.status, &t.body, &sealed, &previous)
	if err != nil {
		return nil, err
	}
	for _, sealed := range append([]string{sealed}, deref(previous)...) {
		secret, err := s.keys.Open(sealed, secretContext(t.endpointID))
		if err != nil {
			return nil, fmt.Errorf("open the secret of webhook endpoint %s: %w", t.endpointID, err)
		}
		t.secrets = append(t.secrets, secret)
	}
	return &t, nil
}

func deref(p *string) []string {
	if p == nil {
		return nil
	}
	return []string{*p}
}

// result is what one attempt saw.
type result struct {
	status   int // 0: no answer
	err      string
	duration time.Duration
	excerpt  string
}

func (r result) ok() bool { return r.status >= 200 && r.status < 300 }

func (r result) String() string {
	if r.status != 0 {
		return "the endpoint answered " + strconv.Itoa(r.status)
	}
	return r.err
}

// attempt sends a delivery once and records what happened; it returns an
// error when a retry is due.
func (s *Service) attempt(ctx context.Context, a DeliverArgs, final bool) error {
	t, err := s.target(ctx, a.DeliveryID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // its endpoint was deleted
	}
	if err != nil {
		return fmt.Errorf("webhook delivery %s: %w", a.DeliveryID, err)
	}
	switch {
	case t.status == "DELIVERED" && !a.Manual:
		return nil
	case !t.enabled:
		// Events are not sent to a disabled endpoint; once it is enabled
		// again, the log's redeliver sends them.
		return s.endPending(ctx, a.DeliveryID)
	}
	r := s.send(ctx, t, a.DeliveryID)
	s.metrics.WebhookAttempt(r.ok())
	if err := s.record(ctx, t, a, r, final); err != nil {
		return err
	}
	if r.ok() || a.Manual {
		return nil
	}
	disabled, err := s.failing(ctx, t, r)
	if err != nil || final {
		return err
	}
	if disabled {
		return s.endPending(ctx, a.DeliveryID)
	}
	return fmt.Errorf("webhook delivery %s: %s", a.DeliveryID, r)
}

// endPending gives up a delivery still pending: FAILED.
func (s *Service) endPending(ctx context.Context, id uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'FAILED' WHERE id = $1 AND status = 'PENDING'`, id); err != nil {
		return fmt.Errorf("end webhook delivery %s: %w", id, err)
	}
	return nil
}

// MessageID is a delivery's webhook-id: the same on every retry and
// redelivery, so the receiver can drop what it has seen.
func MessageID(deliveryID uuid.UUID) string {
	return "msg_" + strings.ReplaceAll(deliveryID.String(), "-", "")
}

// excerptBytes is how much of an endpoint's answer the log keeps.
const excerptBytes = 512

// send posts the delivery, signed now.
func (s *Service) send(ctx context.Context, t *target, id uuid.UUID) result {
	now := time.Now()
	msgID := MessageID(id)
	sig, err := Signature(t.secrets, msgID, now, t.body)
	if err != nil {
		return result{err: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
	if err != nil {
		return result{err: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "BoxOffice-Webhooks/1")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := s.client.Do(req)
	if err != nil {
		return result{err: sendError(err), duration: time.Since(now)}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, excerptBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return result{status: resp.StatusCode, duration: time.Since(now), excerpt: printable(head)}
}

// sendError says why nothing came back, without Go's "Post "url":" prefix.
func sendError(err error) string {
	var uerr interface{ Unwrap() error }
	if errors.As(err, &uerr) && uerr.Unwrap() != nil {
		err = uerr.Unwrap()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

// printable keeps an answer's text readable in the log.
func printable(b []byte) string {
	b = bytes.ToValidUTF8(b, []byte("�"))
	for len(b) > 0 && !utf8.FullRune(b) {
		b = b[:len(b)-1]
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, string(b))
}

// record writes the attempt and moves the delivery on: DELIVERED on a 2xx,
// FAILED when it was the last try.
func (s *Service) record(ctx context.Context, t *target, a DeliverArgs, r result, final bool) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status *int
		if r.status != 0 {
			status = &r.status
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO webhook_attempts (delivery_id, status_code, error, duration_ms, excerpt, manual)
			VALUES ($1, $2, $3, $4, $5, $6)`, a.DeliveryID, status, r.err, r.duration.Milliseconds(), r.excerpt, a.Manual)
		if err != nil {
			return fmt.Errorf("record webhook attempt: %w", err)
		}
		_, err = tx.Exec(ctx, `
			UPDATE webhook_deliveries SET attempts = attempts + 1,
			       status = CASE WHEN $2 THEN 'DELIVERED' WHEN $3 AND status = 'PENDING' THEN 'FAILED' ELSE status END,
			       delivered_at = CASE WHEN $2 THEN coalesce(delivered_at, now()) ELSE delivered_at END
			WHERE id = $1`, a.DeliveryID, r.ok(), final && !a.Manual)
		if err != nil {
			return fmt.Errorf("record webhook delivery: %w", err)
		}
		if r.ok() {
			_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, t.endpointID)
		}
		return err
	})
}

// failing notes that the endpoint failed; once it has failed for
// DisableAfter it is disabled and its alert address told. It reports
// whether the endpoint is now disabled.
func (s *Service) failing(ctx context.Context, t *target, r result) (bool, error) {
	var since time.Time
	var due bool
	err := s.pool.QueryRow(ctx, `
		UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now())
		WHERE id = $1 RETURNING failing_since, enabled AND failing_since <= now() - $2 * interval '1 microsecond'`,
		t.endpointID, s.cfg.DisableAfter.Microseconds()).Scan(&since, &due)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil || !due {
		return false, err
	}
	// Of two attempts failing at once, one disables and mails.
	tag, err := s.pool.Exec(ctx, `
		UPDATE webhook_endpoints SET enabled = false, updated_at = now(),
		       disabled_reason = 'failing since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC: ' || $2
		WHERE id = $1 AND enabled`, t.endpointID, r.String())
	if err != nil {
		return false, fmt.Errorf("disable webhook endpoint: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return true, nil
	}
	s.metrics.WebhookEndpointDisabled()
	s.logger.WarnContext(ctx, "webhook endpoint disabled", "endpoint", t.endpointID, "tenant", t.tenantID,
		"failing_since", since, "last", r.String())
	s.alert(ctx, t, since, r)
	return true, nil
}

// alert mails the endpoint's alert address that it was disabled. A mail
// that fails is logged, not retried: the console shows the state too.
func (s *Service) alert(ctx context.Context, t *target, since time.Time, r result) {
	if s.mailer == nil {
		return
	}
	body := fmt.Sprintf(`BoxOffice has stopped sending events to your webhook endpoint

    %s

Every delivery to it has failed since %s (the last: %s), so it was disabled after %s of failures. Events that happen while it is disabled are not sent to it.

To start again: fix the endpoint, then enable it in the console (Webhooks), or with PATCH /v1/tenants/%s/webhooks/%s and {"enabled": true}. Deliveries that failed can be sent again from the endpoint's delivery log (Redeliver).
`, t.url, since.UTC().Format("2006-01-02 15:04 UTC"), r, s.cfg.DisableAfter, t.tenantID, t.endpointID)
	id := fmt.Sprintf("webhook-disabled-%s-%d", t.endpointID, since.Unix())
	if err := s.mailer.SendID(id, t.alertEmail, "Webhook endpoint disabled: "+t.url, body); err != nil {
		s.logger.WarnContext(ctx, "webhook alert mail failed", "endpoint", t.endpointID, "error", err)
	}
}
