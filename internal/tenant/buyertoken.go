package tenant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// ErrBadBuyerToken covers every reason a buyer token is refused; the reason
// is wrapped for logs but not told to the caller.
var ErrBadBuyerToken = errors.New("invalid buyer token")

// Buyer is an authenticated shopper of one tenant.
type Buyer struct {
	TenantID uuid.UUID
	ID       string
}

// BuyerClaims are the claims a tenant's login puts in a buyer token.
type BuyerClaims struct {
	TenantID string `json:"tid"`
	jwt.RegisteredClaims
}

// SecretSource returns the secrets a tenant's buyer tokens may be signed
// with: the current one, and during a rotation's overlap the previous one.
type SecretSource interface {
	BuyerTokenSecrets(ctx context.Context, tenantID uuid.UUID) ([][]byte, error)
}

// VerifyBuyerToken checks a buyer JWT: HS256 only, exp required, signed with
// the secret of the tenant named in tid.
func VerifyBuyerToken(ctx context.Context, secrets SecretSource, token string) (Buyer, error) {
	var claims BuyerClaims
	var tenantID uuid.UUID
	_, err := jwt.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		id, err := uuid.Parse(claims.TenantID)
		if err != nil {
			return nil, fmt.Errorf("tid claim: %w", err)
		}
		tenantID = id
		list, err := secrets.BuyerTokenSecrets(ctx, id)
		if err != nil {
			return nil, err
		}
		set := jwt.VerificationKeySet{}
		for _, s := range list {
			set.Keys = append(set.Keys, s)
		}
		return set, nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(5*time.Second),
	)
	if err != nil {
		return Buyer{}, fmt.Errorf("%w: %w", ErrBadBuyerToken, err)
	}
	if claims.Subject == "" || len(claims.Subject) > 200 {
		return Buyer{}, fmt.Errorf("%w: sub claim missing or too long", ErrBadBuyerToken)
	}
	return Buyer{TenantID: tenantID, ID: claims.Subject}, nil
}

// SignBuyerToken mints a buyer token the way a tenant's login would. BoxOffice
// uses it for the demo tenant and tests; tenants sign their own.
func SignBuyerToken(secret []byte, tenantID uuid.UUID, buyerID string, ttl time.Duration) (string, error) {
	now := time.Now()
	claims := BuyerClaims{
		TenantID: tenantID.String(),
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   buyerID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("sign buyer token: %w", err)
	}
	return signed, nil
}
