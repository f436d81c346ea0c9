// Package tenant holds white-label tenants, their hashed API keys and the
// verification of the buyer tokens their own logins sign.
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
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Create inserts a tenant with a tenant-admin API key and a buyer-token secret.
func (s *Store) Create(ctx context.Context, p CreateParams) (*Created, error) {
	if p.Domains == nil {
		p.Domains = []string{}
	}
	if p.Theme == nil {
		p.Theme = map[string]string{}
	}
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
		err := tx.QueryRow(ctx, `
			INSERT INTO tenants (id, slug, name, domains, theme, buyer_token_secret)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
			out.ID, p.Slug, p.Name, p.Domains, theme, out.BuyerTokenSecret).Scan(&out.CreatedAt)
		if db.IsUniqueViolation(err, "tenants_slug_key") {
			return ErrSlugTaken
		}
		if err != nil {
			return fmt.Errorf("insert tenant: %w", err)
		}
		return insertKey(ctx, tx, out.ID, RoleTenantAdmin, out.APIKey)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CreateKey issues another API key for a tenant and returns it (shown once).
func (s *Store) CreateKey(ctx context.Context, tenantID uuid.UUID, role string) (string, error) {
	key := NewAPIKey()
	if err := insertKey(ctx, s.pool, tenantID, role, key); err != nil {
		return "", err
	}
	return key, nil
}

// execer is what both a pool and a transaction offer.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func insertKey(ctx context.Context, q execer, tenantID uuid.UUID, role, key string) error {
	_, err := q.Exec(ctx, `INSERT INTO api_keys (id, tenant_id, role, key_hash) VALUES ($1, $2, $3, $4)`,
		uuid.New(), tenantID, role, HashKey(key))
	if db.IsForeignKeyViolation(err) {
		return fmt.Errorf("tenant %s: %w", tenantID, db.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("insert api key: %w", err)
	}
	return nil
}

// KeyOwner is who an API key belongs to.
type KeyOwner struct {
	TenantID uuid.UUID
	Role     string
}

// LookupKey finds the tenant and role of an API key; db.ErrNotFound when the
// key is unknown or revoked.
func (s *Store) LookupKey(ctx context.Context, key string) (KeyOwner, error) {
	var o KeyOwner
	err := s.pool.QueryRow(ctx, `SELECT tenant_id, role FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
		HashKey(key)).Scan(&o.TenantID, &o.Role)
	if err != nil {
		return KeyOwner{}, fmt.Errorf("look up api key: %w", db.NotFound(err))
	}
	return o, nil
}

// BuyerTokenSecret returns the secret a tenant's buyer tokens are signed with.
func (s *Store) BuyerTokenSecret(ctx context.Context, tenantID uuid.UUID) ([]byte, error) {
	var secret string
	err := s.pool.QueryRow(ctx, `SELECT buyer_token_secret FROM tenants WHERE id = $1`, tenantID).Scan(&secret)
	if err != nil {
		return nil, fmt.Errorf("look up tenant %s: %w", tenantID, db.NotFound(err))
	}
	return []byte(secret), nil
}

// APIKeyPrefix starts every API key so it can be told apart from a JWT.
const APIKeyPrefix = "bo_"

// NewAPIKey returns a fresh random API key.
func NewAPIKey() string { return APIKeyPrefix + randomString(32) }

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
