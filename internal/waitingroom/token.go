package waitingroom

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// ErrBadToken covers every reason a queue or access token is refused.
var ErrBadToken = errors.New("invalid waiting-room token")

// Token kinds, so a queue token can never pass as an access token.
const (
	kindQueue  = "queue"
	kindAccess = "access"
)

// Tokens signs and verifies waiting-room tokens (HS256, algorithm pinned,
// expiry required) with the deployment's secret.
type Tokens struct{ secret []byte }

// NewTokens returns a signer.
func NewTokens(secret []byte) *Tokens { return &Tokens{secret: secret} }

// QueueClaims is a queue token: the entry's place. Position is 0 while the
// entrant waits for the draw.
type QueueClaims struct {
	Kind      string    `json:"knd"`
	EntryID   uuid.UUID `json:"eid"`
	ProductID uuid.UUID `json:"pid"`
	TenantID  uuid.UUID `json:"tid"`
	Position  int64     `json:"pos,omitempty"`
	jwt.RegisteredClaims
}

// AccessClaims is an access token: admission of one buyer of one tenant to
// one product.
type AccessClaims struct {
	Kind      string    `json:"knd"`
	ProductID uuid.UUID `json:"pid"`
	TenantID  uuid.UUID `json:"tid"`
	jwt.RegisteredClaims
}

func (t *Tokens) sign(claims jwt.Claims) string {
	s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret) // HMAC never fails
	return s
}

func (t *Tokens) parse(token string, claims jwt.Claims) error {
	_, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	return nil
}

// Queue signs a queue token valid for ttl.
func (t *Tokens) Queue(e Entry, ttl time.Duration) string {
	return t.sign(QueueClaims{Kind: kindQueue, EntryID: e.ID, ProductID: e.ProductID, TenantID: e.TenantID, Position: e.Position,
		RegisteredClaims: jwt.RegisteredClaims{Subject: e.BuyerID, ExpiresAt: jwt.NewNumericDate(time.Now().Add(ttl))}})
}

// ParseQueue verifies a queue token.
func (t *Tokens) ParseQueue(token string) (QueueClaims, error) {
	var c QueueClaims
	if err := t.parse(token, &c); err != nil {
		return c, err
	}
	if c.Kind != kindQueue {
		return c, fmt.Errorf("%w: not a queue token", ErrBadToken)
	}
	return c, nil
}

// Access signs an access token expiring at exp.
func (t *Tokens) Access(tenantID, productID uuid.UUID, buyer string, exp time.Time) string {
	return t.sign(AccessClaims{Kind: kindAccess, ProductID: productID, TenantID: tenantID,
		RegisteredClaims: jwt.RegisteredClaims{Subject: buyer, ExpiresAt: jwt.NewNumericDate(exp)}})
}

// VerifyAccess checks that token admits buyer of tenant to product.
func (t *Tokens) VerifyAccess(token string, tenantID, productID uuid.UUID, buyer string) error {
	var c AccessClaims
	if err := t.parse(token, &c); err != nil {
		return err
	}
	if c.Kind != kindAccess || c.ProductID != productID || c.TenantID != tenantID || c.Subject != buyer {
		return fmt.Errorf("%w: issued for another product, tenant or buyer", ErrBadToken)
	}
	return nil
}
