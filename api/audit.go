package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"boxoffice/internal/audit"
)

// auditedOps are the actions the audit log records (every outcome,
// refusals included): the operators' and admins', and a buyer's own
// transfers and cancellations.
var auditedOps = map[string]bool{
	"create-tenant": true, "set-tenant-quota": true, "create-product": true, "update-product": true,
	"put-layout": true, "put-seat-map": true, "put-store": true, "store-logo-upload": true, "publish-store": true, "start-rehearsal": true,
	"ops-dlq-redrive": true, "ops-river-retry": true, "ops-checkout-pause": true, "ops-checkout-resume": true,
	"create-api-key": true, "revoke-api-key": true, "rotate-buyer-token-secret": true,
	"refund-order": true, "retry-refund": true, "settle-refund": true, "resend-tickets": true,
	"create-event": true, "update-event": true, "cancel-date": true,
	"tune-admission": true, "remove-queue-entry": true,
	// The buyers' own changes to what they bought.
	"transfer-ticket": true, "cancel-order": true,
}

// auditTrail records the audited operations of admins and API keys after
// they ran. A failure to record is logged, never turned into the caller's
// error: the action has happened.
func (s *Server) auditTrail(ctx huma.Context, next func(huma.Context)) {
	next(ctx)
	op := ctx.Operation()
	if s.Audit == nil || op == nil || !auditedOps[op.OperationID] {
		return
	}
	who := caller(ctx.Context())
	if !who.Admin && who.KeyID == uuid.Nil && who.BuyerID == "" {
		return // not authenticated: nothing done
	}
	e := audit.Entry{Action: op.OperationID, Status: ctx.Status(),
		Target: op.Method + " " + ctx.URL().Path, From: clientOf(ctx.Context())}
	e.Actor = who.actor()
	switch {
	case who.Admin:
		if strings.HasPrefix(op.Path, "/v1/tenants/{id}") {
			if id, err := uuid.Parse(ctx.Param("id")); err == nil {
				e.TenantID = &id
			}
		}
	default:
		e.TenantID = &who.TenantID
	}
	if err := s.Audit.Record(context.WithoutCancel(ctx.Context()), e); err != nil {
		s.Logger.Error("audit entry lost", "action", e.Action, "actor", e.Actor, "error", err)
	}
}

// AuditPage is a page of the audit log.
type AuditPage struct {
	Entries []audit.Entry `json:"entries"`
}

// listAudit serves GET /v1/audit.
func (s *Server) listAudit(ctx context.Context, in *struct {
	Limit  int   `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Before int64 `query:"before" minimum:"0" doc:"Entries older than this id (the last id of the previous page)"`
}) (*struct{ Body AuditPage }, error) {
	if s.Audit == nil {
		return nil, problem(http.StatusServiceUnavailable, "AUDIT_UNAVAILABLE", "this server keeps no audit log")
	}
	who := caller(ctx)
	tenantID := who.TenantID // uuid.Nil for the platform admin: everything
	entries, err := s.Audit.List(ctx, tenantID, in.Before, in.Limit)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body AuditPage }{AuditPage{Entries: entries}}, nil
}
