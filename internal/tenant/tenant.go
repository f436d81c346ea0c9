// Package tenant holds white-label tenants, their hashed API keys, quotas
// and the verification of the buyer tokens their own logins sign; it owns
// the tenants and api_keys tables.
package tenant

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/atrest"
	"boxoffice/internal/db"
)

// Roles an API key can carry. The platform admin is not a stored key: it is
// the BOXOFFICE_ADMIN_KEY of the deployment.
const (
	RoleTenantAdmin = "tenant-admin"
	RoleOperator    = "operator"
)

// ErrSlugTaken is returned when a tenant with the slug already exists.
var ErrSlugTaken = errors.New("tenant slug already taken")

// Tenant is a client business with its own store.
type Tenant struct {
	ID        uuid.UUID         `json:"id"`
	Slug      string            `json:"slug"`
	Name      string            `json:"name"`
	Domains   []string          `json:"domains"`
	Theme     map[string]string `json:"theme"`
	CreatedAt time.Time         `json:"createdAt"`
}

// CreateParams describes a new tenant.
type CreateParams struct {
	Slug    string
	Name    string
	Domains []string
	Theme   map[string]string
}

// Created is a new tenant with the secrets that are shown only once.
type Created struct {
	Tenant
	APIKey           string
	BuyerTokenSecret string
}

// Store reads and writes tenants and keys.
type Store struct {
	pool *pgxpool.Pool
	keys *atrest.Keyring
}

// NewStore returns a Store on pool; keys seal the buyer-token secrets it
// stores.
func NewStore(pool *pgxpool.Pool, keys *atrest.Keyring) *Store { return &Store{pool: pool, keys: keys} }

// secretContext binds a tenant's sealed buyer-token secrets to the tenant:
// both columns share it, since rotation moves the current one to previous.
func secretContext(tenantID uuid.UUID) string {
	return "tenants.buyer_token_secret:" + tenantID.String()
}

// Create inserts a tenant with a tenant-admin API key and a buyer-token secret.
// Its store settings are checked as SetStore checks them.
func (s *Store) Create(ctx context.Context, p CreateParams) (*Created, error) {
	settings := StoreSettings{Name: p.Name, Theme: p.Theme, Domains: p.Domains}
	if settings.Theme == nil {
		settings.Theme = map[string]string{}
	}
	if settings.Domains == nil {
		settings.Domains = []string{}
	}
	if err := settings.validate(); err != nil {
		return nil, err
	}
	p.Theme, p.Domains = settings.Theme, settings.Domains
	theme, err := json.Marshal(p.Theme)
	if err != nil {
		return nil, fmt.Errorf("encode theme: %w", err)
	}
	out := &Created{
		Tenant:           Tenant{ID: uuid.New(), Slug: p.Slug, Name: p.Name, Domains: p.Domains, Theme: p.Theme},
		APIKey:           NewAPIKey(),
		BuyerTokenSecret: randomString(32),
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := claimDomains(ctx, tx, out.ID, p.Domains); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `
			INSERT INTO tenants (id, slug, name, domains, theme, buyer_token_secret)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
			out.ID, p.Slug, p.Name, p.Domains, theme, s.keys.Seal(out.BuyerTokenSecret, secretContext(out.ID))).Scan(&out.CreatedAt)
		if db.IsUniqueViolation(err, "tenants_slug_key") {
			return ErrSlugTaken
		}
		if err != nil {
			return fmt.Errorf("insert tenant: %w", err)
		}
		_, err = insertKey(ctx, tx, out.ID, RoleTenantAdmin, "", out.APIKey)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Key is an API key as listed: never the key itself, which is shown once.
type Key struct {
	ID         uuid.UUID  `json:"id"`
	Role       string     `json:"role"`
	Label      string     `json:"label,omitempty"`
	Prefix     string     `json:"prefix,omitempty" doc:"The key's first characters, to tell keys apart (keys made before prefixes were kept have none)"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty" doc:"Within a minute: use is recorded at most once a minute"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
}

// CreateKey issues another API key for a tenant and returns its id and the
// IDBySlug returns the id of the tenant with the slug (db.ErrNotFound when
// there is none).
func (s *Store) IDBySlug(ctx context.Context, slug string) (uuid.UUID, error) {
	var id uuid.UUID
	if err := s.pool.QueryRow(ctx, `SELECT id FROM tenants WHERE slug = $1`, slug).Scan(&id); err != nil {
		return uuid.Nil, fmt.Errorf("tenant %q: %w", slug, db.NotFound(err))
	}
	return id, nil
}

// key (shown once).
func (s *Store) CreateKey(ctx context.Context, tenantID uuid.UUID, role, label string) (uuid.UUID, string, error) {
	key := NewAPIKey()
	id, err := insertKey(ctx, s.pool, tenantID, role, label, key)
	if err != nil {
		return uuid.Nil, "", err
	}
	return id, key, nil
}

// ListKeys returns a tenant's keys, newest first.
func (s *Store) ListKeys(ctx context.Context, tenantID uuid.UUID) ([]Key, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, role, label, prefix, created_at, last_used_at, revoked_at FROM api_keys
		WHERE tenant_id = $1 ORDER BY created_at DESC, id`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Key])
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return keys, nil
}

// RevokeKey revokes one of a tenant's keys; revoking twice is not an error.
// db.ErrNotFound when the tenant has no such key.
func (s *Store) RevokeKey(ctx context.Context, tenantID, keyID uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND tenant_id = $2`, keyID, tenantID)
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("api key %s: %w", keyID, db.ErrNotFound)
	}
	return nil
}

// RevokeLabelled revokes every live key of the tenant with the label and
// says how many.
func (s *Store) RevokeLabelled(ctx context.Context, tenantID uuid.UUID, label string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND label = $2 AND revoked_at IS NULL`, tenantID, label)
	if err != nil {
		return 0, fmt.Errorf("revoke %q keys: %w", label, err)
	}
	return tag.RowsAffected(), nil
}

// RotateBuyerTokenSecret gives the tenant a new buyer-token secret and
// keeps the current one valid for overlap, so that tokens already issued
// by the tenant's login keep working while it switches. It returns the new
// secret (shown once) and when the previous one stops verifying.
func (s *Store) RotateBuyerTokenSecret(ctx context.Context, tenantID uuid.UUID, overlap time.Duration) (string, time.Time, error) {
	secret := randomString(32)
	var until time.Time
	err := s.pool.QueryRow(ctx, `
		UPDATE tenants SET previous_buyer_token_secret = buyer_token_secret,
		                   previous_secret_expires_at = now() + $3 * interval '1 microsecond',
		                   buyer_token_secret = $2
		WHERE id = $1 RETURNING previous_secret_expires_at`,
		tenantID, s.keys.Seal(secret, secretContext(tenantID)), overlap.Microseconds()).Scan(&until)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("rotate buyer token secret of %s: %w", tenantID, db.NotFound(err))
	}
	return secret, until, nil
}

func insertKey(ctx context.Context, q db.DBTX, tenantID uuid.UUID, role, label, key string) (uuid.UUID, error) {
	id := uuid.New()
	_, err := q.Exec(ctx, `INSERT INTO api_keys (id, tenant_id, role, label, key_hash, prefix) VALUES ($1, $2, $3, $4, $5, $6)`,
		id, tenantID, role, label, HashKey(key), KeyPrefix(key))
	if db.IsForeignKeyViolation(err) {
		return uuid.Nil, fmt.Errorf("tenant %s: %w", tenantID, db.ErrNotFound)
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("insert api key: %w", err)
	}
	return id, nil
}

// KeyOwner is who an API key belongs to.
type KeyOwner struct {
	KeyID    uuid.UUID
	TenantID uuid.UUID
	Role     string
}

// LookupKey finds the tenant and role of an API key; db.ErrNotFound when the
// key is unknown or revoked.
func (s *Store) LookupKey(ctx context.Context, key string) (KeyOwner, error) {
	var o KeyOwner
	// The lookup records the use, at most once a minute per key (the API
	// caches lookups for seconds, so this writes rarely).
	err := s.pool.QueryRow(ctx, `
		WITH k AS (SELECT id, tenant_id, role, last_used_at FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL),
		used AS (
			UPDATE api_keys SET last_used_at = now() FROM k
			WHERE api_keys.id = k.id AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute'))
		SELECT id, tenant_id, role FROM k`,
		HashKey(key)).Scan(&o.KeyID, &o.TenantID, &o.Role)
	if err != nil {
		return KeyOwner{}, fmt.Errorf("look up api key: %w", db.NotFound(err))
	}
	return o, nil
}

// BuyerTokenKeys returns the keys of the tenant's BuyerTokenSecrets, to
// verify its buyer tokens with (KeySource).
func (s *Store) BuyerTokenKeys(ctx context.Context, tenantID uuid.UUID) ([]*TokenKey, error) {
	secrets, err := s.BuyerTokenSecrets(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return NewTokenKeys(secrets), nil
}

// BuyerTokenSecrets returns the secrets a tenant's buyer tokens may be
// signed with: the current one, and the previous one until its overlap ends.
func (s *Store) BuyerTokenSecrets(ctx context.Context, tenantID uuid.UUID) ([][]byte, error) {
	var secret string
	var previous *string
	err := s.pool.QueryRow(ctx, `
		SELECT buyer_token_secret,
		       CASE WHEN previous_secret_expires_at > now() THEN previous_buyer_token_secret END
		FROM tenants WHERE id = $1`, tenantID).Scan(&secret, &previous)
	if err != nil {
		return nil, fmt.Errorf("look up tenant %s: %w", tenantID, db.NotFound(err))
	}
	plain, err := s.keys.Open(secret, secretContext(tenantID))
	if err != nil {
		return nil, fmt.Errorf("buyer token secret of tenant %s: %w", tenantID, err)
	}
	out := [][]byte{[]byte(plain)}
	if previous != nil {
		if plain, err = s.keys.Open(*previous, secretContext(tenantID)); err != nil {
			return nil, fmt.Errorf("previous buyer token secret of tenant %s: %w", tenantID, err)
		}
		out = append(out, []byte(plain))
	}
	return out, nil
}

// Reseal seals every stored buyer-token secret that is not sealed under the
// keyring's first key: those left in clear by a version before sealing and
// those sealed under a key being rotated out. `migrate` runs it; it returns
// how many tenants it resealed.
func (s *Store) Reseal(ctx context.Context) (int, error) {
	current := s.keys.CurrentPrefix()
	resealed := 0
	for {
		// A batch at a time, each row locked and rewritten in one
		// transaction, so that a rotation racing this sees either value. A
		// previous secret past its overlap is dropped, not resealed: it
		// verifies nothing, and may be under a key already retired.
		n := 0
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `
				SELECT id, buyer_token_secret,
				       CASE WHEN previous_secret_expires_at > now() THEN previous_buyer_token_secret END
				FROM tenants
				WHERE NOT starts_with(buyer_token_secret, $1)
				   OR NOT starts_with(coalesce(previous_buyer_token_secret, $1), $1)
				   OR previous_buyer_token_secret IS NOT NULL AND NOT previous_secret_expires_at > now()
				ORDER BY id LIMIT 100 FOR UPDATE`, current)
			if err != nil {
				return fmt.Errorf("tenants to reseal: %w", err)
			}
			type row struct {
				ID       uuid.UUID
				Secret   string
				Previous *string
			}
			list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
			if err != nil {
				return fmt.Errorf("tenants to reseal: %w", err)
			}
			for _, r := range list {
				secret, err := s.reseal(r.ID, r.Secret)
				if err != nil {
					return err
				}
				var previous *string
				if r.Previous != nil {
					p, err := s.reseal(r.ID, *r.Previous)
					if err != nil {
						return err
					}
					previous = &p
				}
				if _, err := tx.Exec(ctx, `UPDATE tenants SET buyer_token_secret = $2, previous_buyer_token_secret = $3 WHERE id = $1`,
					r.ID, secret, previous); err != nil {
					return fmt.Errorf("reseal tenant %s: %w", r.ID, err)
				}
			}
			n = len(list)
			return nil
		})
		if err != nil {
			return resealed, err
		}
		resealed += n
		if n < 100 {
			return resealed, nil
		}
	}
}

func (s *Store) reseal(tenantID uuid.UUID, v string) (string, error) {
	plain, err := s.keys.Open(v, secretContext(tenantID))
	if err != nil {
		return "", fmt.Errorf("reseal tenant %s: %w", tenantID, err)
	}
	return s.keys.Seal(plain, secretContext(tenantID)), nil
}

// APIKeyPrefix starts every API key so it can be told apart from a JWT.
const APIKeyPrefix = "bo_"

// NewAPIKey returns a fresh random API key.
func NewAPIKey() string { return APIKeyPrefix + randomString(32) }

// KeyPrefix is the part of a key kept to tell keys apart: "bo_" and six
// characters of its 32 random ones (too few to guess the rest by).
func KeyPrefix(key string) string {
	if len(key) < len(APIKeyPrefix)+6 {
		return ""
	}
	return key[:len(APIKeyPrefix)+6]
}

// KeyInForce reports whether the key keyID is still the key hashed as
// keyHash and not revoked: what a console session opened with it checks on
// every use.
func (s *Store) KeyInForce(ctx context.Context, keyID uuid.UUID, keyHash []byte) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM api_keys WHERE id = $1 AND key_hash = $2 AND revoked_at IS NULL)`, keyID, keyHash).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check key %s: %w", keyID, err)
	}
	return ok, nil
}

// HashKey is how API keys are stored.
func HashKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

func randomString(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(buf)
}
