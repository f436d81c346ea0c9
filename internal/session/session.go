// Package session keeps the console's sign-ins: a credential (the platform
// admin key or a tenant's API key) is checked once by the API and exchanged
// for a random session token carried in a cookie. Sessions live in
// PostgreSQL, so every API process accepts them, and end on sign-out, after
// an idle time, or at an absolute time whatever the use. It owns the
// console_sessions table.
package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoSession is returned for an unknown, ended, idle or expired session.
var ErrNoSession = errors.New("no such session")

// Who signed in: the platform admin, or a tenant's API key.
type Who struct {
	Admin    bool
	TenantID uuid.UUID
	KeyID    uuid.UUID
	Role     string
}

// Session is a live sign-in.
type Session struct {
	Who
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
	// credential is the SHA-256 of the key the session was opened with.
	credential []byte
}

// OpenedWith reports whether the session was opened with key.
func (s Session) OpenedWith(key string) bool {
	return key != "" && subtle.ConstantTimeCompare(s.credential, hash(key)) == 1
}

// CredentialHash is the SHA-256 of the key the session was opened with,
// which is how API keys are stored (tenant.HashKey).
func (s Session) CredentialHash() []byte { return s.credential }

// Limits are how long a session lives.
type Limits struct {
	Idle     time.Duration // ends after this long without a request
	Absolute time.Duration // ends this long after sign-in, whatever the use
}

// Store creates, reads and ends sessions.
type Store struct {
	pool   *pgxpool.Pool
	limits Limits
}

// New returns a Store; zero limits mean 30 minutes idle, 12 hours absolute.
func New(pool *pgxpool.Pool, l Limits) *Store {
	if l.Idle <= 0 {
		l.Idle = 30 * time.Minute
	}
	if l.Absolute <= 0 {
		l.Absolute = 12 * time.Hour
	}
	return &Store{pool: pool, limits: l}
}

// Limits returns the store's idle and absolute lifetimes.
func (s *Store) Limits() Limits { return s.limits }

// touchEvery bounds how often a request rewrites last_seen_at: the idle
// clock is this coarse, and a busy console page writes rarely.
const touchEvery = 15 * time.Second

// Create starts a session for who, signed in with credential (the key
// given) from client; it returns the token for the cookie. Neither the
// token nor the credential is stored: only their hashes are.
func (s *Store) Create(ctx context.Context, who Who, credential, client string) (token string, _ Session, _ error) {
	token, err := random()
	if err != nil {
		return "", Session{}, err
	}
	csrf, err := random()
	if err != nil {
		return "", Session{}, err
	}
	var tenantID, keyID *uuid.UUID
	var role *string
	if !who.Admin {
		tenantID, keyID, role = &who.TenantID, &who.KeyID, &who.Role
	}
	sess := Session{Who: who, CSRF: csrf}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Sign-ins are rare: each clears the sessions long past their end.
		if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at < now() - interval '1 day'`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			INSERT INTO console_sessions (token_hash, csrf_token, admin, tenant_id, key_id, role, client, expires_at, credential_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8::interval, $9)
			RETURNING created_at, expires_at`,
			hash(token), csrf, who.Admin, tenantID, keyID, role, client, s.limits.Absolute, hash(credential),
		).Scan(&sess.CreatedAt, &sess.ExpiresAt)
	})
	if err != nil {
		return "", Session{}, fmt.Errorf("create console session: %w", err)
	}
	return token, sess, nil
}

// Get returns the live session of token and counts the request as use;
// ErrNoSession when it is unknown, signed out, idle too long or past its end.
// Whether the credential it was opened with is still in force is the
// caller's to check (see Session.OpenedWith).
func (s *Store) Get(ctx context.Context, token string) (Session, error) {
	var sess Session
	var tenantID, keyID *uuid.UUID
	var role *string
	var lastSeen time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT admin, tenant_id, key_id, role, csrf_token, created_at, expires_at, last_seen_at, credential_hash
		FROM console_sessions
		WHERE token_hash = $1 AND ended_at IS NULL AND expires_at > now()
		  AND last_seen_at > now() - $2::interval AND credential_hash IS NOT NULL`, hash(token), s.limits.Idle,
	).Scan(&sess.Admin, &tenantID, &keyID, &role, &sess.CSRF, &sess.CreatedAt, &sess.ExpiresAt, &lastSeen, &sess.credential)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, ErrNoSession
	}
	if err != nil {
		return Session{}, fmt.Errorf("read console session: %w", err)
	}
	if tenantID != nil {
		sess.TenantID, sess.KeyID, sess.Role = *tenantID, *keyID, *role
	}
	if time.Since(lastSeen) > touchEvery {
		if _, err := s.pool.Exec(ctx, `UPDATE console_sessions SET last_seen_at = now() WHERE token_hash = $1`, hash(token)); err != nil {
			return Session{}, fmt.Errorf("touch console session: %w", err)
		}
	}
	return sess, nil
}

// End signs a session out; ending an unknown or ended one is not an error.
func (s *Store) End(ctx context.Context, token string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE console_sessions SET ended_at = now() WHERE token_hash = $1 AND ended_at IS NULL`, hash(token)); err != nil {
		return fmt.Errorf("end console session: %w", err)
	}
	return nil
}

// EndForKey signs out every session of an API key (it was revoked).
func (s *Store) EndForKey(ctx context.Context, keyID uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE console_sessions SET ended_at = now() WHERE key_id = $1 AND ended_at IS NULL`, keyID); err != nil {
		return fmt.Errorf("end console sessions of key %s: %w", keyID, err)
	}
	return nil
}

func random() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("session token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hash is what is stored of a token: a database dump gives no sign-in.
func hash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
