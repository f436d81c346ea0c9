package waitingroom

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Proof of work at the door: a product may ask each buyer to spend about a
// second of a browser's time before joining its room, so that a bot farm
// pays per join. The challenge is a signed token bound to the buyer, the
// product and a difficulty, valid for minutes; the join carries a solution
// s such that SHA-256(challenge + ":" + s) starts with that many zero bits.
// Checking it needs no database read. Solving one twice gains nothing: a
// buyer has one entry whatever happens.

// ChallengeTTL is how long a challenge may be solved and used.
const ChallengeTTL = 5 * time.Minute

// kindChallenge marks challenge tokens.
const kindChallenge = "challenge"

// ErrChallenge covers every refused solution: forged, expired, another
// buyer's or product's, or not enough work.
var ErrChallenge = errors.New("proof-of-work challenge not solved")

// Challenge is what a buyer is asked to solve.
type Challenge struct {
	Challenge string    `json:"challenge" doc:"Find s such that SHA-256(challenge + \":\" + s) starts with bits zero bits"`
	Bits      int       `json:"bits"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type challengeClaims struct {
	Kind      string    `json:"knd"`
	ProductID uuid.UUID `json:"pid"`
	TenantID  uuid.UUID `json:"tid"`
	Bits      int       `json:"bits"`
	jwt.RegisteredClaims
}

// Challenge issues a challenge of the given difficulty to a buyer.
func (t *Tokens) Challenge(tenantID, productID uuid.UUID, buyer string, difficulty int) Challenge {
	exp := time.Now().Add(ChallengeTTL).Truncate(time.Second)
	token := t.sign(challengeClaims{Kind: kindChallenge, ProductID: productID, TenantID: tenantID, Bits: difficulty,
		RegisteredClaims: jwt.RegisteredClaims{Subject: buyer, ExpiresAt: jwt.NewNumericDate(exp), ID: rand.Text()}})
	return Challenge{Challenge: token, Bits: difficulty, ExpiresAt: exp}
}

// VerifySolution checks that solution solves a challenge issued to this
// buyer for this product with at least difficulty bits.
func (t *Tokens) VerifySolution(challenge, solution string, tenantID, productID uuid.UUID, buyer string, difficulty int) error {
	var c challengeClaims
	if err := t.parse(challenge, &c); err != nil {
		return fmt.Errorf("%w: %w", ErrChallenge, err)
	}
	if c.Kind != kindChallenge || c.ProductID != productID || c.TenantID != tenantID || c.Subject != buyer {
		return fmt.Errorf("%w: issued for another product, tenant or buyer", ErrChallenge)
	}
	if c.Bits < difficulty {
		return fmt.Errorf("%w: issued at %d bits, %d asked now", ErrChallenge, c.Bits, difficulty)
	}
	if len(solution) == 0 || len(solution) > 64 || leadingZeroBits(challenge, solution) < difficulty {
		return fmt.Errorf("%w: the solution does not reach %d zero bits", ErrChallenge, difficulty)
	}
	return nil
}

// Solve finds a solution by brute force (tests, benchmarks and tools; a
// browser does the same in JavaScript).
func Solve(challenge string, difficulty int) string {
	for i := 0; ; i++ {
		s := fmt.Sprint(i)
		if leadingZeroBits(challenge, s) >= difficulty {
			return s
		}
	}
}

func leadingZeroBits(challenge, solution string) int {
	sum := sha256.Sum256([]byte(challenge + ":" + solution))
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}
