// Package audit records what operators and admins did — who, when, what,
// from where — and reads it back. It owns the audit_log table.
package audit

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Entry is one recorded action.
type Entry struct {
	ID       int64      `json:"id"`
	At       time.Time  `json:"at"`
	TenantID *uuid.UUID `json:"tenantId,omitempty" doc:"The tenant acted on; absent for platform actions"`
	Actor    string     `json:"actor" doc:"platform-admin, or the role and id of the API key"`
	Action   string     `json:"action" doc:"The operation, e.g. ops-checkout-pause, revoke-api-key"`
	Target   string     `json:"target" doc:"Method and path of the request"`
	Status   int        `json:"status"`
	From     string     `json:"from" doc:"The client's address"`
}

// Log writes and reads the audit log.
type Log struct {
	pool *pgxpool.Pool
}

// New returns a Log on pool.
func New(pool *pgxpool.Pool) *Log { return &Log{pool: pool} }

// Record writes one entry. Its text fields are kept on one line: a target
// is a request's path, which a caller chooses, and a CR/LF in it would
// forge a line in every log or CSV the audit is read into.
func (l *Log) Record(ctx context.Context, e Entry) error {
	e.Actor, e.Action, e.Target, e.From = oneLine(e.Actor), oneLine(e.Action), oneLine(e.Target), oneLine(e.From)
	_, err := l.pool.Exec(ctx, `
		INSERT INTO audit_log (tenant_id, actor, action, target, status, client)
		VALUES ($1, $2, $3, $4, $5, $6)`, e.TenantID, e.Actor, e.Action, e.Target, e.Status, e.From)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	return nil
}

// List returns the newest entries first, at most limit, of one tenant (all
// with uuid.Nil), older than before when it is set (paging).
func (l *Log) List(ctx context.Context, tenantID uuid.UUID, before int64, limit int) ([]Entry, error) {
	var tenant *uuid.UUID
	if tenantID != uuid.Nil {
		tenant = &tenantID
	}
	rows, err := l.pool.Query(ctx, `
		SELECT id, at, tenant_id, actor, action, target, status, client FROM audit_log
		WHERE ($1::uuid IS NULL OR tenant_id = $1) AND ($2 = 0 OR id < $2)
		ORDER BY id DESC LIMIT $3`, tenant, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Entry])
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	if out == nil {
		out = []Entry{}
	}
	return out, nil
}

// oneLine replaces control characters with U+FFFD and keeps at most 500
// bytes, the length of any legitimate target.
func oneLine(v string) string {
	v = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(v, string(utf8.RuneError)))
	if len(v) > 500 {
		v = strings.ToValidUTF8(v[:500], "")
	}
	return v
}
