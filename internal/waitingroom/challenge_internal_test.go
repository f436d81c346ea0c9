package waitingroom

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestChallengeExpires(t *testing.T) {
	tok := NewTokens([]byte("secret"))
	tenant, product := uuid.New(), uuid.New()
	expired := tok.sign(challengeClaims{Kind: kindChallenge, ProductID: product, TenantID: tenant, Bits: 4,
		RegisteredClaims: jwt.RegisteredClaims{Subject: "ana", ExpiresAt: jwt.NewNumericDate(time.Now().Add(-time.Second))}})
	require.ErrorIs(t, tok.VerifySolution(expired, Solve(expired, 4), tenant, product, "ana", 4), ErrChallenge)

	live := tok.Challenge(tenant, product, "ana", 4)
	require.NoError(t, tok.VerifySolution(live.Challenge, Solve(live.Challenge, 4), tenant, product, "ana", 4))
	// A room that raised its difficulty refuses an easier challenge.
	require.ErrorIs(t, tok.VerifySolution(live.Challenge, Solve(live.Challenge, 4), tenant, product, "ana", 6), ErrChallenge)
	// An access token is not a challenge.
	access := tok.Access(tenant, product, "ana", time.Now().Add(time.Minute))
	require.ErrorIs(t, tok.VerifySolution(access, "0", tenant, product, "ana", 0), ErrChallenge)
}
