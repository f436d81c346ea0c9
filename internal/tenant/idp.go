package tenant

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"boxoffice/internal/db"
)

// IdentityProvider is a tenant's own login (Auth0, Cognito, Keycloak,
// Entra…): its buyers bring the provider's RS256 or ES256 tokens, checked
// against the keys it publishes at JWKSURL. A token's iss and aud name the
// tenant; its sub is the buyer.
type IdentityProvider struct {
	JWKSURL  string `json:"jwksUrl" doc:"Where the provider publishes its signing keys (a JWKS document)"`
	Issuer   string `json:"issuer" doc:"The iss its tokens carry"`
	Audience string `json:"audience" doc:"The aud its tokens for this store carry"`
}

// ErrIdentityProviderTaken is an issuer and audience another tenant has.
var ErrIdentityProviderTaken = errors.New("another tenant signs in buyers with this issuer and audience")

// SetIdentityProvider sets the tenant's identity provider; nil removes it.
func (s *Store) SetIdentityProvider(ctx context.Context, tenantID uuid.UUID, p *IdentityProvider) error {
	var url, iss, aud *string
	if p != nil {
		url, iss, aud = &p.JWKSURL, &p.Issuer, &p.Audience
	}
	tag, err := s.pool.Exec(ctx, `UPDATE tenants SET jwks_url = $2, jwt_issuer = $3, jwt_audience = $4 WHERE id = $1`,
		tenantID, url, iss, aud)
	if db.IsUniqueViolation(err, "tenants_identity_provider") {
		return ErrIdentityProviderTaken
	}
	if err != nil {
		return fmt.Errorf("identity provider of %s: %w", tenantID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("tenant %s: %w", tenantID, db.ErrNotFound)
	}
	return nil
}

// IdentityProviderOf returns the tenant's identity provider, nil when it
// has none.
func (s *Store) IdentityProviderOf(ctx context.Context, tenantID uuid.UUID) (*IdentityProvider, error) {
	var url, iss, aud *string
	err := s.pool.QueryRow(ctx, `SELECT jwks_url, jwt_issuer, jwt_audience FROM tenants WHERE id = $1`, tenantID).
		Scan(&url, &iss, &aud)
	if err != nil {
		return nil, fmt.Errorf("identity provider of %s: %w", tenantID, db.NotFound(err))
	}
	if url == nil {
		return nil, nil
	}
	return &IdentityProvider{JWKSURL: *url, Issuer: *iss, Audience: *aud}, nil
}

// Issuer is the tenant a provider's issuer and audience name, and where
// the provider's keys are.
type Issuer struct {
	TenantID uuid.UUID
	JWKSURL  string
}

// IssuerOf finds the tenant whose identity provider has this issuer and
// one of these audiences (db.ErrNotFound when none).
func (s *Store) IssuerOf(ctx context.Context, issuer string, audiences []string) (Issuer, error) {
	var out Issuer
	err := s.pool.QueryRow(ctx, `
		SELECT id, jwks_url FROM tenants WHERE jwks_url IS NOT NULL AND jwt_issuer = $1 AND jwt_audience = ANY($2)
		ORDER BY id LIMIT 1`, issuer, audiences).Scan(&out.TenantID, &out.JWKSURL)
	if err != nil {
		return out, fmt.Errorf("identity provider %s: %w", issuer, db.NotFound(err))
	}
	return out, nil
}

// IssuerSource finds the tenant of a provider token (the API caches it).
type IssuerSource interface {
	IssuerOf(ctx context.Context, issuer string, audiences []string) (Issuer, error)
}

// providerAlgs are the algorithms a provider token may be signed with.
var providerAlgs = []string{"RS256", "ES256"}

// IsProviderToken says whether the token claims an identity provider's
// algorithm (RS256, ES256) rather than a tenant secret's (HS256).
func IsProviderToken(token string) bool {
	header, _, ok := strings.Cut(token, ".")
	if !ok || len(token) > maxTokenLength {
		return false
	}
	h, err := decodeHeader(header)
	return err == nil && (h.Alg == "RS256" || h.Alg == "ES256")
}

// VerifyProviderToken checks a buyer token from a tenant's identity
// provider: RS256 or ES256 only, signed by a key the provider publishes
// (kid), iss and aud those of one tenant's provider, exp required and
// within the buyer-token lifetime, sub a plain buyer id.
func VerifyProviderToken(ctx context.Context, issuers IssuerSource, keys *KeySets, token string) (Buyer, time.Time, error) {
	bad := func(why string) (Buyer, time.Time, error) {
		return Buyer{}, time.Time{}, fmt.Errorf("%w: %s", ErrBadBuyerToken, why)
	}
	if len(token) > maxTokenLength {
		return bad("too long")
	}
	var c jwt.RegisteredClaims
	var issuer Issuer
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		var err error
		if issuer, err = issuers.IssuerOf(ctx, c.Issuer, c.Audience); err != nil {
			return nil, err
		}
		return keys.Key(ctx, issuer.JWKSURL, kid)
	}, jwt.WithValidMethods(providerAlgs), jwt.WithExpirationRequired(), jwt.WithLeeway(tokenLeeway*time.Second))
	if err != nil {
		return bad(err.Error())
	}
	if c.ExpiresAt.After(time.Now().Add(MaxBuyerTokenLifetime + tokenLeeway*time.Second)) {
		return bad("exp claim further ahead than a buyer token may live")
	}
	if why := badSubject(c.Subject); why != "" {
		return bad(why)
	}
	return Buyer{TenantID: issuer.TenantID, ID: c.Subject}, c.ExpiresAt.Time, nil
}

// KeySets fetches and keeps identity providers' published keys: each
// JWKS for as long as its Cache-Control says (between a minute and a
// day; an hour without one), fetched again sooner when a token names a
// key it does not have — at most every 30 s, so a stream of tokens with
// made-up key ids cannot turn into a stream of fetches.
type KeySets struct {
	client *http.Client
	mu     sync.Mutex
	sets   map[string]*keySet
}

type keySet struct {
	mu      sync.Mutex // one fetch at a time per URL
	keys    map[string]crypto.PublicKey
	fetched time.Time
	expires time.Time
}

// NewKeySets fetches with client (a netguard client: the URLs are the
// tenants').
func NewKeySets(client *http.Client) *KeySets {
	return &KeySets{client: client, sets: map[string]*keySet{}}
}

// Bounds on what one provider's keys may cost.
const (
	maxJWKSBytes   = 1 << 20
	maxJWKSKeys    = 100
	maxKeySets     = 10_000
	refetchAtMost  = 30 * time.Second
	defaultKeysTTL = time.Hour
)

// Key returns the key kid of the JWKS at url.
func (k *KeySets) Key(ctx context.Context, url, kid string) (crypto.PublicKey, error) {
	k.mu.Lock()
	set := k.sets[url]
	if set == nil {
		if len(k.sets) >= maxKeySets {
			clear(k.sets) // bounded: a provider's keys are fetched again
		}
		set = &keySet{}
		k.sets[url] = set
	}
	k.mu.Unlock()

	set.mu.Lock()
	defer set.mu.Unlock()
	now := time.Now()
	key, known := set.keys[kid]
	switch {
	case known && now.Before(set.expires):
		return key, nil
	case !known && now.Before(set.expires) && now.Sub(set.fetched) < refetchAtMost:
		return nil, fmt.Errorf("no key %q in %s", kid, url)
	}
	keys, ttl, err := k.fetch(ctx, url)
	if err != nil {
		if known {
			// The provider is unreachable: its keys stay good a while.
			set.expires = now.Add(time.Minute)
			return key, nil
		}
		return nil, err
	}
	set.keys, set.fetched, set.expires = keys, now, now.Add(ttl)
	if key, ok := keys[kid]; ok {
		return key, nil
	}
	return nil, fmt.Errorf("no key %q in %s", kid, url)
}

var maxAge = regexp.MustCompile(`(?:^|[,\s])max-age=(\d+)`)

// fetch reads a JWKS document: its signing keys by id, and how long to
// keep them.
func (k *KeySets) fetch(ctx context.Context, url string) (map[string]crypto.PublicKey, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("jwks %s: %w", url, err)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("jwks %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("jwks %s: %s", url, resp.Status)
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&doc); err != nil {
		return nil, 0, fmt.Errorf("jwks %s: %w", url, err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, j := range doc.Keys {
		if len(keys) == maxJWKSKeys {
			break
		}
		if key, err := j.public(); err == nil && (j.Use == "" || j.Use == "sig") {
			keys[j.Kid] = key
		}
	}
	if len(keys) == 0 {
		return nil, 0, fmt.Errorf("jwks %s: no RSA or P-256 signing key", url)
	}
	ttl := defaultKeysTTL
	if m := maxAge.FindStringSubmatch(resp.Header.Get("Cache-Control")); m != nil {
		if s, err := strconv.Atoi(m[1]); err == nil {
			ttl = min(max(time.Duration(s)*time.Second, time.Minute), 24*time.Hour)
		}
	}
	return keys, ttl, nil
}

// CheckKeys fetches a JWKS once, to tell an admin setting it up whether it
// holds a usable key.
func (k *KeySets) CheckKeys(ctx context.Context, url string) error {
	_, _, err := k.fetch(ctx, url)
	return err
}

// jwk is one key of a JWKS (RFC 7517): RSA or EC P-256.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func (j jwk) public() (crypto.PublicKey, error) {
	b64 := base64.RawURLEncoding
	switch j.Kty {
	case "RSA":
		n, err1 := b64.DecodeString(j.N)
		e, err2 := b64.DecodeString(j.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 || len(n) < 256 {
			return nil, errors.New("bad RSA key (2048 bits at least)")
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "EC":
		x, err1 := b64.DecodeString(j.X)
		y, err2 := b64.DecodeString(j.Y)
		if j.Crv != "P-256" || err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil, errors.New("bad EC key (P-256 only)")
		}
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	}
	return nil, fmt.Errorf("key type %q", j.Kty)
}
