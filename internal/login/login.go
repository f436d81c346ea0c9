// Package login is passwordless buyer login for stores whose tenants have
// no login of their own: a six-digit code sent by e-mail or SMS, exchanged
// for a buyer token. It owns the login_codes and login_buyers tables.
//
// Codes are stored as salted HMACs under a key from the environment (a
// database reader cannot try the million codes offline) and compared in
// constant time; a code
// dies after ten minutes, once used, or after MaxCodeTries wrong tries from
// all clients together; an identifier has one live code at a time (the
// newest). Sends and tries are limited per identifier and client (an IPv4
// address or an IPv6 /64): a stranger asking for someone's codes, or
// guessing at them, runs out without locking the owner out.
// Asking for a code answers the same whether or not the identifier has
// logged in before (nothing tells who is a customer), and no code is ever
// logged.
package login

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/atrest"
	"boxoffice/internal/db"
)

// Limits of the codes.
const (
	CodeTTL      = 10 * time.Minute
	MaxTries     = 5  // wrong tries per identifier and client per window
	MaxCodeTries = 50 // wrong tries of one code from every client; then it dies
	SendWindow   = 10 * time.Minute
	MaxSends     = 3  // codes per identifier and client per window
	MaxAllSends  = 20 // codes per identifier per window, every client together
	codeDigits   = 6
	buyerPrefix  = "login_"
)

// Errors.
var (
	// ErrInvalidCode covers every failed verification alike: wrong,
	// expired, used, dead after too many tries, or never sent.
	ErrInvalidCode = errors.New("the code is wrong or no longer valid")
	// ErrTooManySends: the identifier asked for too many codes lately.
	ErrTooManySends = errors.New("too many codes asked for; wait a few minutes")
	// ErrIdentifier: neither a valid e-mail address nor a phone number.
	ErrIdentifier = errors.New("give a valid e-mail address or a phone number in international form (+351...)")
)

// Identifier is who logs in: an e-mail address or a phone number.
type Identifier struct {
	Email string
	Phone string
}

var phone = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// Normalize checks the identifier and returns its canonical key
// ("email:…" lower-cased, or "phone:+…" without spaces).
func (id Identifier) Normalize() (string, error) {
	switch {
	case id.Email != "" && id.Phone == "":
		a, err := mail.ParseAddress(id.Email)
		if err != nil || a.Address != strings.TrimSpace(id.Email) || len(a.Address) > 254 {
			return "", ErrIdentifier
		}
		return "email:" + strings.ToLower(a.Address), nil
	case id.Phone != "" && id.Email == "":
		p := strings.NewReplacer(" ", "", "-", "", "(", "", ")", "").Replace(id.Phone)
		if !phone.MatchString(p) {
			return "", ErrIdentifier
		}
		return "phone:" + p, nil
	}
	return "", ErrIdentifier
}

// Store issues and checks codes.
type Store struct {
	pool *pgxpool.Pool
	keys *atrest.Keyring
}

// NewStore returns a Store on pool; keys MAC the codes it stores.
func NewStore(pool *pgxpool.Pool, keys *atrest.Keyring) *Store { return &Store{pool: pool, keys: keys} }

// Issue makes a new code for the identifier, asked from client, replacing
// any live one (the newest code is the valid one), and returns it for
// sending (never for logs). ErrTooManySends past MaxSends for this client
// or MaxAllSends for the identifier in a window; the live code then stays.
func (s *Store) Issue(ctx context.Context, tenantID uuid.UUID, key, client string) (string, error) {
	code, err := newCode()
	if err != nil {
		return "", err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("code salt: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sends, err := countClient(ctx, tx, tenantID, key, client, "sends")
		if err != nil {
			return err
		}
		if sends > MaxSends {
			return ErrTooManySends
		}
		var all int
		err = tx.QueryRow(ctx, `
			INSERT INTO login_codes (tenant_id, identifier, salt, code_hash, expires_at)
			VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
			ON CONFLICT (tenant_id, identifier) DO UPDATE SET
			    salt = excluded.salt, code_hash = excluded.code_hash, expires_at = excluded.expires_at,
			    tries = 0, used_at = NULL,
			    window_start = CASE WHEN login_codes.window_start < now() - make_interval(secs => $6)
			                        THEN now() ELSE login_codes.window_start END,
			    sends = CASE WHEN login_codes.window_start < now() - make_interval(secs => $6)
			                 THEN 1 ELSE login_codes.sends + 1 END
			RETURNING sends`,
			tenantID, key, salt, s.keys.MAC(codePurpose, salt, []byte(code)), CodeTTL.Seconds(), SendWindow.Seconds()).Scan(&all)
		if err != nil {
			return fmt.Errorf("issue login code: %w", err)
		}
		if all > MaxAllSends {
			return ErrTooManySends // rolls the new code back: the live one stays
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return code, nil
}

// countClient counts one send or try (column) of the identifier from
// client in the current window, committing it with tx, and returns the
// window's count so far.
func countClient(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, key, client, column string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `
		INSERT INTO login_clients (tenant_id, identifier, client, `+column+`) VALUES ($1, $2, $3, 1)
		ON CONFLICT (tenant_id, identifier, client) DO UPDATE SET
		    window_start = CASE WHEN login_clients.window_start < now() - make_interval(secs => $4)
		                        THEN now() ELSE login_clients.window_start END,
		    sends = CASE WHEN login_clients.window_start < now() - make_interval(secs => $4)
		                 THEN 0 ELSE login_clients.sends END + CASE WHEN $5 = 'sends' THEN 1 ELSE 0 END,
		    tries = CASE WHEN login_clients.window_start < now() - make_interval(secs => $4)
		                 THEN 0 ELSE login_clients.tries END + CASE WHEN $5 = 'tries' THEN 1 ELSE 0 END
		RETURNING `+column,
		tenantID, key, client, SendWindow.Seconds(), column).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count login %s: %w", column, err)
	}
	return n, nil
}

// CountSMS counts one SMS code of the tenant today (UTC) and reports
// whether it is within cap; past it the count stays and nothing is sent.
func (s *Store) CountSMS(ctx context.Context, tenantID uuid.UUID, cap int) (bool, error) {
	var sent int
	err := s.pool.QueryRow(ctx, `
		INSERT INTO login_sms_days (tenant_id, day, sent) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 1)
		ON CONFLICT (tenant_id, day) DO UPDATE SET sent = login_sms_days.sent + 1
		WHERE login_sms_days.sent < $2
		RETURNING sent`, tenantID, cap).Scan(&sent)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("count sms: %w", err)
	}
	return sent <= cap, nil
}

// Verify checks a code given from client and, once, returns the
// identifier's buyer id. Every failure is ErrInvalidCode and counts a try
// (committed even though the verification failed); a client past MaxTries
// is refused without the code being looked at, so the code stays good for
// its owner.
func (s *Store) Verify(ctx context.Context, tenantID uuid.UUID, key, client, code string) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("verify login code: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tries, err := countClient(ctx, tx, tenantID, key, client, "tries")
	if err != nil {
		return "", err
	}
	if tries > MaxTries {
		if err := tx.Commit(ctx); err != nil {
			return "", fmt.Errorf("count login try: %w", err)
		}
		return "", ErrInvalidCode
	}
	var salt, want []byte
	var live bool
	var codeTries int
	err = tx.QueryRow(ctx, `
		SELECT salt, code_hash, used_at IS NULL AND expires_at > now(), tries
		FROM login_codes WHERE tenant_id = $1 AND identifier = $2 FOR UPDATE`, tenantID, key).
		Scan(&salt, &want, &live, &codeTries)
	if errors.Is(err, pgx.ErrNoRows) {
		// MAC and compare anyway: an unknown identifier takes as long.
		s.keys.Verify(make([]byte, sha256.Size), codePurpose, make([]byte, 16), []byte(code))
		if err := tx.Commit(ctx); err != nil {
			return "", fmt.Errorf("count login try: %w", err)
		}
		return "", ErrInvalidCode
	}
	if err != nil {
		return "", fmt.Errorf("read login code: %w", err)
	}
	if !s.keys.Verify(want, codePurpose, salt, []byte(code)) || !live || codeTries >= MaxCodeTries {
		if _, err := tx.Exec(ctx, `UPDATE login_codes SET tries = tries + 1 WHERE tenant_id = $1 AND identifier = $2`,
			tenantID, key); err != nil {
			return "", fmt.Errorf("count login try: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return "", fmt.Errorf("count login try: %w", err)
		}
		return "", ErrInvalidCode
	}
	if _, err := tx.Exec(ctx, `UPDATE login_codes SET used_at = now() WHERE tenant_id = $1 AND identifier = $2`,
		tenantID, key); err != nil {
		return "", fmt.Errorf("use login code: %w", err)
	}
	buyer, err := buyerOf(ctx, tx, tenantID, key)
	if err != nil {
		return "", err
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("verify login code: %w", err)
	}
	return buyer, nil
}

// codePurpose separates login codes' MACs from any other use of the keys.
const codePurpose = "login code"

func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", fmt.Errorf("login code: %w", err)
	}
	return fmt.Sprintf("%0*d", codeDigits, n.Int64()), nil
}

// buyerOf returns the buyer id of an identifier's key, made on first use:
// whoever signs in with the identifier, or receives a ticket at it, is the
// same buyer.
func buyerOf(ctx context.Context, q db.DBTX, tenantID uuid.UUID, key string) (string, error) {
	var buyer string
	err := q.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO login_buyers (tenant_id, identifier, buyer_id) VALUES ($1, $2, $3)
			ON CONFLICT (tenant_id, identifier) DO NOTHING RETURNING buyer_id)
		SELECT buyer_id FROM ins
		UNION ALL SELECT buyer_id FROM login_buyers WHERE tenant_id = $1 AND identifier = $2
		LIMIT 1`, tenantID, key, buyerPrefix+uuid.NewString()).Scan(&buyer)
	if err != nil {
		return "", fmt.Errorf("buyer of login: %w", err)
	}
	return buyer, nil
}

// BuyerForEmail returns the buyer id of an e-mail address (ErrIdentifier
// when it is not one), in the caller's transaction: the buyer who signs in
// with it later is this one.
func BuyerForEmail(ctx context.Context, q db.DBTX, tenantID uuid.UUID, email string) (string, error) {
	key, err := Identifier{Email: email}.Normalize()
	if err != nil {
		return "", err
	}
	return buyerOf(ctx, q, tenantID, key)
}

// FindBuyerByEmail returns the buyer id of an e-mail address that has one
// ("" when nobody signed in or received a ticket with it yet).
func FindBuyerByEmail(ctx context.Context, q db.DBTX, tenantID uuid.UUID, email string) (string, error) {
	key, err := Identifier{Email: email}.Normalize()
	if err != nil {
		return "", err
	}
	var buyer string
	err = q.QueryRow(ctx, `SELECT buyer_id FROM login_buyers WHERE tenant_id = $1 AND identifier = $2`, tenantID, key).Scan(&buyer)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("buyer of %s: %w", key, err)
	}
	return buyer, nil
}
