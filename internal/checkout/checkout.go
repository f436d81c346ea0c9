// Package checkout turns holds into confirmed orders through a payment
// provider: orders and payment attempts, the one transaction that confirms
// (claims SOLD, order CONFIRMED, tickets, outbox), and the jobs that
// authorize, resolve unknown outcomes, capture, void and reconcile. No
// database lock is ever held across a provider call. It owns the orders,
// payment attempts, tickets, webhook events and checkout-control tables,
// and converts holds through reservation's functions.
package checkout

import (
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"boxoffice/internal/mail"
	"boxoffice/internal/metrics"
	"boxoffice/internal/payment"
	"boxoffice/internal/ticket"
)

// Order statuses.
const (
	StatusPending   = "PENDING_PAYMENT"
	StatusConfirmed = "CONFIRMED"
	StatusFailed    = "FAILED"
	StatusExpired   = "EXPIRED"
	StatusRefunded  = "REFUNDED"
)

// Errors the API maps to problems.
var (
	ErrCheckoutPaused      = errors.New("checkout is paused")
	ErrHoldNotActive       = errors.New("the hold is no longer active")
	ErrOrderExists         = errors.New("the hold already has an order")
	ErrIdempotencyConflict = errors.New("idempotency key already used for another order")
)

// Config tunes checkout. Zero is a value, not "the default": start from
// DefaultConfig and change what differs.
type Config struct {
	// Grace extends a hold once when checkout starts, so an authorization in
	// flight does not lose its seats at the last second (default 2m; 0: no
	// extension).
	Grace time.Duration
	// PauseAfterUnknown pauses checkout by itself when this many payment
	// outcomes are unresolved (default 50).
	PauseAfterUnknown int
	// ResolveAfter is how old a pending or unknown attempt must be before the
	// reconciler asks the provider (default 1m).
	ResolveAfter time.Duration
	// TestMode is the provider rehearsals' orders pay with (a payment
	// simulator: never the real provider); nil: rehearsals do not pay.
	TestMode payment.Provider
	// Mailer sends the tickets; nil: none are sent.
	Mailer *mail.Sender
}

// DefaultConfig is checkout's configuration with every default.
func DefaultConfig() Config {
	return Config{Grace: 2 * time.Minute, PauseAfterUnknown: 50, ResolveAfter: time.Minute}
}

// Service is checkout.
type Service struct {
	pool     *pgxpool.Pool
	river    *river.Client[pgx.Tx]
	provider payment.Provider
	testMode payment.Provider // rehearsals' payments (nil: none)
	tickets  *ticket.Signer
	mailer   *mail.Sender
	metrics  *metrics.Metrics
	logger   *slog.Logger
	cfg      Config
	// applying holds a slot for each payment result being applied
	// (maxApplying).
	applying chan struct{}
}

// maxApplying bounds the payment results one process applies at once. A
// confirmation moves held numbers to sold under the product's inventory
// row lock: an opening's hundreds of payment workers each waiting for that
// lock held a database connection apiece — the whole pool, with claims
// and accepts waiting behind them — and the database spun on the lock's
// queue. A few at a time confirm as many a second.
const maxApplying = 8

// NewService returns the checkout service; it inserts its jobs with
// riverClient (an insert-only client will do: the workers run elsewhere).
func NewService(pool *pgxpool.Pool, riverClient *river.Client[pgx.Tx], provider payment.Provider, tickets *ticket.Signer,
	m *metrics.Metrics, logger *slog.Logger, cfg Config) *Service {
	s := &Service{pool: pool, river: riverClient, provider: provider, tickets: tickets, mailer: cfg.Mailer,
		metrics: m, logger: logger, cfg: cfg, applying: make(chan struct{}, maxApplying)}
	if cfg.TestMode != nil {
		s.testMode = payment.Named(cfg.TestMode, payment.TestModeName)
	}
	return s
}

// Provider is the payment provider in use.
func (s *Service) Provider() payment.Provider { return s.provider }

// TestMode reports whether rehearsals can pay here.
func (s *Service) TestMode() bool { return s.testMode != nil }

// ErrNoTestMode refuses a rehearsal's order where no test-mode provider is
// set: its payment would otherwise reach the real provider.
var ErrNoTestMode = errors.New("no test-mode payment provider for a rehearsal's order")

// providerOf is the provider a payment attempt was made with.
func (s *Service) providerOf(name string) payment.Provider {
	if s.testMode != nil && name == s.testMode.Name() {
		return s.testMode
	}
	return s.provider
}

// Order is an order as a shopper sees it.
type Order struct {
	ID            uuid.UUID  `json:"id"`
	Ref           string     `json:"ref" doc:"The order's short reference, as its e-mails print it (the search of a tenant's orders finds it)"`
	HoldID        uuid.UUID  `json:"holdId"`
	ProductID     uuid.UUID  `json:"productId"`
	Status        string     `json:"status" doc:"PENDING_PAYMENT, CONFIRMED, FAILED, EXPIRED; after a sale: REFUND_PENDING (a refund at the provider), REFUND_FAILED, REFUNDED (every ticket refunded), CANCELLED"`
	Reason        string     `json:"reason,omitempty"`
	Payment       string     `json:"payment" doc:"State of the current payment attempt: PENDING, UNKNOWN (still being resolved), AUTHORIZED, DECLINED, CAPTURED, VOIDED, REFUNDED"`
	CaptureStatus string     `json:"captureStatus"`
	AmountCents   int64      `json:"amountCents" doc:"What the order charges: the seats' prices and the booking fees"`
	FeeCents      int64      `json:"feeCents" doc:"The booking fees included in amountCents"`
	DiscountCents int64      `json:"discountCents" doc:"What the discount code took off the tickets' prices (amountCents is after it)"`
	DiscountCode  string     `json:"discountCode,omitempty"`
	RefundedCents int64      `json:"refundedCents" doc:"How much of the amount was given back (a partly refunded order stays CONFIRMED)"`
	Currency      string     `json:"currency"`
	Numbers       []int32    `json:"numbers"`
	Seats         []string   `json:"seats" doc:"The numbers' seats as people read them: North · Row A · Seat 7 (Number 7 for numbered products)"`
	Tickets       []Ticket   `json:"tickets,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	ConfirmedAt   *time.Time `json:"confirmedAt,omitempty"`
}

// Ticket is one sold number with its signed code.
type Ticket struct {
	ID     uuid.UUID `json:"id"`
	Number int32     `json:"number"`
	Seat   string    `json:"seat" doc:"North · Row A · Seat 7"`
	Status string    `json:"status" enum:"VALID,VOID,TRANSFERRED" doc:"VOID from the moment its refund is asked for"`
	Code   string    `json:"code,omitempty" doc:"Only while the ticket admits (VALID), and to its holder"`
	HeldBy string    `json:"heldBy,omitempty" doc:"The address a ticket of this order was transferred to"`
}
