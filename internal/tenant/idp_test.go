package tenant

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/db"
	"boxoffice/internal/netguard"
)

// provider is an identity provider for tests: it signs tokens and
// publishes its current keys at a JWKS URL of its own.
type provider struct {
	mu      sync.Mutex
	keys    map[string]crypto.Signer
	fetches atomic.Int64
	srv     *httptest.Server
}

func newProvider(t testing.TB) *provider {
	p := &provider{keys: map[string]crypto.Signer{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		defer p.mu.Unlock()
		b64 := base64.RawURLEncoding
		var keys []map[string]string
		for kid, k := range p.keys {
			switch pub := k.Public().(type) {
			case *rsa.PublicKey:
				keys = append(keys, map[string]string{"kty": "RSA", "kid": kid, "use": "sig",
					"n": b64.EncodeToString(pub.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes())})
			case *ecdsa.PublicKey:
				raw, _ := pub.Bytes()
				keys = append(keys, map[string]string{"kty": "EC", "kid": kid, "crv": "P-256",
					"x": b64.EncodeToString(raw[1:33]), "y": b64.EncodeToString(raw[33:])})
			}
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) add(t testing.TB, kid string, ec bool) {
	var k crypto.Signer
	var err error
	if ec {
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	require.NoError(t, err)
	p.mu.Lock()
	p.keys[kid] = k
	p.mu.Unlock()
}

func (p *provider) drop(kid string) {
	p.mu.Lock()
	delete(p.keys, kid)
	p.mu.Unlock()
}

func (p *provider) sign(t testing.TB, kid, sub string, ttl time.Duration) string {
	return p.signAs(t, kid, kid, sub, ttl)
}

// signAs signs with the key kid, naming the key named in its header.
func (p *provider) signAs(t testing.TB, kid, named, sub string, ttl time.Duration) string {
	p.mu.Lock()
	k := p.keys[kid]
	p.mu.Unlock()
	method := jwt.SigningMethod(jwt.SigningMethodRS256)
	if _, ok := k.(*ecdsa.PrivateKey); ok {
		method = jwt.SigningMethodES256
	}
	tok := jwt.NewWithClaims(method, jwt.RegisteredClaims{Issuer: "https://login.acme.test/", Audience: jwt.ClaimStrings{"boxoffice"},
		Subject: sub, ExpiresAt: jwt.NewNumericDate(time.Now().Add(ttl))})
	tok.Header["kid"] = named
	s, err := tok.SignedString(k)
	require.NoError(t, err)
	return s
}

// oneIssuer is a tenant's identity provider as the store would find it.
type oneIssuer struct{ Issuer }

func (o oneIssuer) IssuerOf(_ context.Context, iss string, aud []string) (Issuer, error) {
	if iss == "https://login.acme.test/" && len(aud) == 1 && aud[0] == "boxoffice" {
		return o.Issuer, nil
	}
	return Issuer{}, db.ErrNotFound
}

// A provider's RS256 and ES256 tokens verify against its JWKS, fetched
// once and kept; a rotated-in key is fetched when a token first names it;
// a key dropped from the JWKS stops verifying once the keys are fetched
// again; wrong algorithms, issuers and expired tokens are refused.
func TestProviderTokens(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	p.add(t, "rsa-1", false)
	p.add(t, "ec-1", true)
	tid := uuid.New()
	issuers := oneIssuer{Issuer{TenantID: tid, JWKSURL: p.srv.URL}}
	keys := NewKeySets(netguard.Guard{AllowPrivate: true}.Client(time.Second))
	ctx := context.Background()

	for _, kid := range []string{"rsa-1", "ec-1"} {
		tok := p.sign(t, kid, "auth0|ana", time.Hour)
		require.True(t, IsProviderToken(tok))
		b, exp, err := VerifyProviderToken(ctx, issuers, keys, tok)
		require.NoError(t, err, kid)
		require.Equal(t, Buyer{TenantID: tid, ID: "auth0|ana"}, b)
		require.WithinDuration(t, time.Now().Add(time.Hour), exp, 5*time.Second)
	}
	require.EqualValues(t, 1, p.fetches.Load(), "the JWKS is fetched once, then kept")

	// Rotation: a new key, named by a token, is fetched; once the old one
	// is dropped and the keys fetched again, its tokens stop verifying.
	old := p.sign(t, "rsa-1", "auth0|ana", time.Hour)
	p.add(t, "rsa-2", false)
	keys.sets[p.srv.URL].fetched = time.Now().Add(-refetchAtMost) // the last fetch is 30 s old
	_, _, err := VerifyProviderToken(ctx, issuers, keys, p.sign(t, "rsa-2", "auth0|bea", time.Hour))
	require.NoError(t, err, "a key rotated in is fetched on first sight")
	require.EqualValues(t, 2, p.fetches.Load())
	_, _, err = VerifyProviderToken(ctx, issuers, keys, p.signAs(t, "rsa-2", "nope", "auth0|eve", time.Hour))
	require.ErrorIs(t, err, ErrBadBuyerToken, "an unknown key id")
	require.EqualValues(t, 2, p.fetches.Load(), "unknown key ids refetch at most every 30 s")
	p.drop("rsa-1")
	keys.sets[p.srv.URL].expires = time.Now() // the JWKS's max-age has run out
	_, _, err = VerifyProviderToken(ctx, issuers, keys, old)
	require.ErrorIs(t, err, ErrBadBuyerToken, "a key dropped from the JWKS")

	// What is refused.
	_, _, err = VerifyProviderToken(ctx, issuers, keys, p.sign(t, "rsa-2", "auth0|ana", -time.Minute))
	require.ErrorIs(t, err, ErrBadBuyerToken, "expired")
	_, _, err = VerifyProviderToken(ctx, issuers, keys, p.sign(t, "rsa-2", "auth0|ana", 30*24*time.Hour))
	require.ErrorIs(t, err, ErrBadBuyerToken, "living longer than a buyer token may")
	hs, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: "https://login.acme.test/",
		Audience: jwt.ClaimStrings{"boxoffice"}, Subject: "x", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).SignedString([]byte("k"))
	require.NoError(t, err)
	require.False(t, IsProviderToken(hs))
	_, _, err = VerifyProviderToken(ctx, issuers, keys, hs)
	require.ErrorIs(t, err, ErrBadBuyerToken, "HS256 is the tenant secret's, never a provider's")
	_, _, err = VerifyProviderToken(ctx, oneIssuer{}, keys, p.sign(t, "rsa-2", "auth0|ana", time.Hour))
	require.ErrorIs(t, err, ErrBadBuyerToken, "an issuer no tenant has")
}

// The cost of a provider token's signature check beside HS256's
// (BenchmarkVerifyBuyerToken): the API checks each distinct token once.
func BenchmarkVerifyProviderToken(b *testing.B) {
	for _, alg := range []struct {
		name string
		ec   bool
	}{{"RS256", false}, {"ES256", true}} {
		b.Run(alg.name, func(b *testing.B) {
			p := newProvider(b)
			p.add(b, "k", alg.ec)
			issuers := oneIssuer{Issuer{TenantID: uuid.New(), JWKSURL: p.srv.URL}}
			keys := NewKeySets(netguard.Guard{AllowPrivate: true}.Client(time.Second))
			tok := p.sign(b, "k", "auth0|ana", time.Hour)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := VerifyProviderToken(ctx, issuers, keys, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
