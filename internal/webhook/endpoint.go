package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"boxoffice/internal/atrest"
	"boxoffice/internal/db"
	bmail "boxoffice/internal/mail"
	"boxoffice/internal/metrics"
	"boxoffice/internal/netguard"
)

// MaxEndpoints is how many endpoints one tenant may have.
const MaxEndpoints = 20

// Errors the API turns into problems.
var (
	// ErrInvalidURL wraps why a target URL is refused (netguard).
	ErrInvalidURL = errors.New("invalid webhook URL")
	// ErrUnknownType is an event type that does not exist.
	ErrUnknownType = errors.New("unknown event type")
	// ErrInvalidEmail is an alert address that is not one.
	ErrInvalidEmail = errors.New("invalid alert e-mail address")
	// ErrTooManyEndpoints is a tenant's endpoint beyond MaxEndpoints.
	ErrTooManyEndpoints = fmt.Errorf("a tenant has at most %d webhook endpoints", MaxEndpoints)
	// ErrDisabled is a redelivery or test to a disabled endpoint.
	ErrDisabled = errors.New("the endpoint is disabled: enable it first")
)

// Config configures deliveries.
type Config struct {
	// AllowPrivate lets targets be loopback, private or plain http
	// (development and tests).
	AllowPrivate bool
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	// FirstRetry is the wait before the first retry; later ones grow from
	// it (default 5s: the last of 11 attempts about 24 h after the first).
	FirstRetry time.Duration
	// DisableAfter is how long an endpoint may fail before it is disabled
	// (default 24h).
	DisableAfter time.Duration
}

// Service manages endpoints and delivers to them.
type Service struct {
	pool    *pgxpool.Pool
	keys    *atrest.Keyring
	jobs    *river.Client[pgx.Tx] // inserts delivery jobs (test events, redeliveries)
	mailer  *bmail.Sender         // nil: no alert mail
	metrics *metrics.Metrics
	logger  *slog.Logger
	cfg     Config
	guard   netguard.Guard
	client  *http.Client
}

// NewService builds the service; jobs inserts delivery jobs, mailer (may be
// nil) sends the alert when an endpoint is disabled.
func NewService(pool *pgxpool.Pool, keys *atrest.Keyring, jobs *river.Client[pgx.Tx], mailer *bmail.Sender,
	m *metrics.Metrics, logger *slog.Logger, cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.FirstRetry <= 0 {
		cfg.FirstRetry = 5 * time.Second
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = 24 * time.Hour
	}
	g := netguard.Guard{AllowPrivate: cfg.AllowPrivate}
	return &Service{pool: pool, keys: keys, jobs: jobs, mailer: mailer, metrics: m, logger: logger, cfg: cfg, guard: g,
		client: g.Client(cfg.Timeout)}
}

// Endpoint is one of a tenant's webhook endpoints (never its secret).
type Endpoint struct {
	ID                  uuid.UUID  `json:"id" format:"uuid"`
	URL                 string     `json:"url"`
	Description         string     `json:"description"`
	EventTypes          []string   `json:"eventTypes" doc:"Empty: every event type"`
	AlertEmail          string     `json:"alertEmail" doc:"Told when the endpoint is disabled after a day of failures"`
	Enabled             bool       `json:"enabled"`
	DisabledReason      string     `json:"disabledReason,omitempty"`
	FailingSince        *time.Time `json:"failingSince,omitempty" doc:"Every attempt since has failed; at a day it is disabled"`
	PreviousSecretUntil *time.Time `json:"previousSecretUntil,omitempty" doc:"After a rotation, deliveries carry a second signature with the previous secret until then"`
	CreatedAt           time.Time  `json:"createdAt"`
}

// Params are an endpoint's settings.
type Params struct {
	URL         string
	Description string
	EventTypes  []string
	AlertEmail  string
}

// check refuses settings that cannot work.
func (s *Service) check(p Params) error {
	if err := s.guard.CheckURL(p.URL); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	for _, t := range p.EventTypes {
		if !KnownType(t) {
			return fmt.Errorf("%w: %q", ErrUnknownType, t)
		}
	}
	if a, err := mail.ParseAddress(p.AlertEmail); err != nil || a.Address != p.AlertEmail {
		return fmt.Errorf("%w: %q", ErrInvalidEmail, p.AlertEmail)
	}
	return nil
}

// secretContext binds a sealed secret to its endpoint.
func secretContext(id uuid.UUID) string { return "webhook-secret:" + id.String() }

const selectEndpoint = `
	SELECT id, url, description, event_types, alert_email, enabled, disabled_reason, failing_since,
	       CASE WHEN previous_until > now() THEN previous_until END, created_at
	FROM webhook_endpoints`

func scanEndpoint(row pgx.Row) (*Endpoint, error) {
	var e Endpoint
	err := row.Scan(&e.ID, &e.URL, &e.Description, &e.EventTypes, &e.AlertEmail, &e.Enabled, &e.DisabledReason,
		&e.FailingSince, &e.PreviousSecretUntil, &e.CreatedAt)
	return &e, err
}

// Create adds an endpoint and returns it with its secret, which is never
// shown again.
func (s *Service) Create(ctx context.Context, tenantID uuid.UUID, p Params) (*Endpoint, string, error) {
	p = tidy(p)
	if err := s.check(p); err != nil {
		return nil, "", err
	}
	id, secret := db.NewID(), NewSecret()
	var e *Endpoint
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// One creation at a time per tenant, so the count holds.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "webhooks:"+tenantID.String()); err != nil {
			return fmt.Errorf("lock webhook endpoints: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
			return fmt.Errorf("count webhook endpoints: %w", err)
		}
		if n >= MaxEndpoints {
			return ErrTooManyEndpoints
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO webhook_endpoints (id, tenant_id, url, description, event_types, alert_email, secret)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			id, tenantID, p.URL, p.Description, p.EventTypes, p.AlertEmail, s.keys.Seal(secret, secretContext(id)))
		if db.IsForeignKeyViolation(err) {
			return fmt.Errorf("tenant %s: %w", tenantID, db.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("create webhook endpoint: %w", err)
		}
		e, err = scanEndpoint(tx.QueryRow(ctx, selectEndpoint+` WHERE id = $1`, id))
		if err != nil {
			return fmt.Errorf("read webhook endpoint: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return e, secret, nil
}

// tidy trims what people paste.
func tidy(p Params) Params {
	p.URL, p.AlertEmail, p.Description = strings.TrimSpace(p.URL), strings.TrimSpace(p.AlertEmail), strings.TrimSpace(p.Description)
	if p.EventTypes == nil {
		p.EventTypes = []string{}
	}
	return p
}

// List returns a tenant's endpoints, oldest first.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID) ([]*Endpoint, error) {
	rows, err := s.pool.Query(ctx, selectEndpoint+` WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Endpoint, error) { return scanEndpoint(r) })
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	return out, nil
}

// Get returns one of a tenant's endpoints (db.ErrNotFound otherwise).
func (s *Service) Get(ctx context.Context, tenantID, id uuid.UUID) (*Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, selectEndpoint+` WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if err != nil {
		return nil, fmt.Errorf("webhook endpoint %s: %w", id, db.NotFound(err))
	}
	return e, nil
}

// Change is what an update changes; nil fields stay.
type Change struct {
	URL, Description, AlertEmail *string
	EventTypes                   []string // nil: unchanged
	Enabled                      *bool
}

// Update changes an endpoint. Enabling it clears its failures: the next
// event is tried afresh (deliveries that failed meanwhile are redelivered
// by hand from the log).
func (s *Service) Update(ctx context.Context, tenantID, id uuid.UUID, c Change) (*Endpoint, error) {
	cur, err := s.Get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	p := Params{URL: cur.URL, Description: cur.Description, EventTypes: cur.EventTypes, AlertEmail: cur.AlertEmail}
	if c.URL != nil {
		p.URL = *c.URL
	}
	if c.Description != nil {
		p.Description = *c.Description
	}
	if c.AlertEmail != nil {
		p.AlertEmail = *c.AlertEmail
	}
	if c.EventTypes != nil {
		p.EventTypes = c.EventTypes
	}
	p = tidy(p)
	if err := s.check(p); err != nil {
		return nil, err
	}
	enabled := cur.Enabled
	if c.Enabled != nil {
		enabled = *c.Enabled
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE webhook_endpoints SET url = $3, description = $4, event_types = $5, alert_email = $6, enabled = $7,
		       disabled_reason = CASE WHEN $7 THEN '' WHEN enabled THEN 'disabled by the tenant' ELSE disabled_reason END,
		       failing_since = CASE WHEN $7 AND NOT enabled THEN NULL ELSE failing_since END, updated_at = now()
		WHERE id = $1 AND tenant_id = $2`, id, tenantID, p.URL, p.Description, p.EventTypes, p.AlertEmail, enabled)
	if err != nil {
		return nil, fmt.Errorf("update webhook endpoint %s: %w", id, err)
	}
	return s.Get(ctx, tenantID, id)
}

// Delete removes an endpoint and its delivery log.
func (s *Service) Delete(ctx context.Context, tenantID, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2`, id, tenantID)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook endpoint %s: %w", id, db.ErrNotFound)
	}
	return nil
}

// RotateSecret gives an endpoint a new secret, returned once; deliveries
// are signed with both until the overlap ends, so the receiver can switch
// at its own pace.
func (s *Service) RotateSecret(ctx context.Context, tenantID, id uuid.UUID, overlap time.Duration) (string, time.Time, error) {
	secret := NewSecret()
	var until time.Time
	err := s.pool.QueryRow(ctx, `
		UPDATE webhook_endpoints SET previous_secret = secret, previous_until = now() + $4 * interval '1 microsecond',
		       secret = $3, updated_at = now()
		WHERE id = $1 AND tenant_id = $2 RETURNING previous_until`,
		id, tenantID, s.keys.Seal(secret, secretContext(id)), overlap.Microseconds()).Scan(&until)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("rotate webhook secret of %s: %w", id, db.NotFound(err))
	}
	return secret, until, nil
}
