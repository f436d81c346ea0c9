package waitingroom

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// ErrBadToken covers every reason a queue or access token is refused.
var ErrBadToken = errors.New("invalid waiting-room token")

// kindAccess marks access tokens (queue tokens have another format
// altogether, so one can never pass for the other).
const kindAccess = "access"

// Tokens signs and verifies waiting-room tokens with the deployment's
// secret: access tokens are JWTs (HS256 pinned, expiry required), queue
// tokens a compact signed layout.
type Tokens struct{ secret []byte }

// NewTokens returns a signer.
func NewTokens(secret []byte) *Tokens { return &Tokens{secret: secret} }

// QueueClaims is a queue token: the entry's place. Position is 0 while the
// entrant waits for the draw.
type QueueClaims struct {
	EntryID   uuid.UUID
	ProductID uuid.UUID
	TenantID  uuid.UUID
	Position  int64
	Subject   string    // the buyer
	Round     uuid.UUID // the presale round entered (uuid.Nil: the general sale's line)
	ExpiresAt time.Time
}

// Queue tokens are polled far more than anything else, so they are not JWTs
// but a fixed binary layout — version, entry, product, tenant, position,
// expiry, buyer, and a presale entrant's round — in base64url, a dot, and a
// truncated HMAC-SHA256 over the layout: verifying one costs one short
// HMAC, no JSON.
const queueTokenVersion = 1

// Queue signs a queue token valid for ttl.
func (t *Tokens) Queue(e Entry, ttl time.Duration) string {
	buf := make([]byte, 0, 1+16*3+8+8+1+len(e.BuyerID)+16)
	buf = append(buf, queueTokenVersion)
	buf = append(buf, e.ID[:]...)
	buf = append(buf, e.ProductID[:]...)
	buf = append(buf, e.TenantID[:]...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(e.Position))
	buf = binary.BigEndian.AppendUint64(buf, uint64(time.Now().Add(ttl).Unix()))
	buf = append(buf, byte(min(len(e.BuyerID), 255)))
	buf = append(buf, e.BuyerID[:min(len(e.BuyerID), 255)]...)
	if e.Round != uuid.Nil {
		buf = append(buf, e.Round[:]...)
	}
	return base64.RawURLEncoding.EncodeToString(buf) + "." + base64.RawURLEncoding.EncodeToString(t.queueMAC(buf))
}

func (t *Tokens) queueMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte("queue:"))
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// ParseQueue verifies a queue token.
func (t *Tokens) ParseQueue(token string) (QueueClaims, error) {
	var c QueueClaims
	body, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 1000 {
		return c, fmt.Errorf("%w: malformed queue token", ErrBadToken)
	}
	// Strict: a token has one spelling. Lax decoding ignores the last
	// character's unused bits, so one token had 16 accepted spellings,
	// each a fresh key for whatever counts per token.
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(body)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err1 != nil || err2 != nil || len(payload) < 1+16*3+8+8+1 || payload[0] != queueTokenVersion {
		return c, fmt.Errorf("%w: malformed queue token", ErrBadToken)
	}
	if !hmac.Equal(mac, t.queueMAC(payload)) {
		return c, fmt.Errorf("%w: bad queue token signature", ErrBadToken)
	}
	p := payload[1:]
	copy(c.EntryID[:], p[0:16])
	copy(c.ProductID[:], p[16:32])
	copy(c.TenantID[:], p[32:48])
	c.Position = int64(binary.BigEndian.Uint64(p[48:56]))
	c.ExpiresAt = time.Unix(int64(binary.BigEndian.Uint64(p[56:64])), 0)
	n := int(p[64])
	switch len(p) {
	case 65 + n:
	case 65 + n + 16:
		copy(c.Round[:], p[65+n:])
	default:
		return QueueClaims{}, fmt.Errorf("%w: malformed queue token", ErrBadToken)
	}
	c.Subject = string(p[65 : 65+n])
	if time.Now().After(c.ExpiresAt) {
		return QueueClaims{}, fmt.Errorf("%w: queue token expired", ErrBadToken)
	}
	return c, nil
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
