package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"riverqueue.com/riverui"

	"boxoffice/internal/ops"
	"boxoffice/internal/sqsqueue"
)

// DLQView is a page of dead-lettered messages.
type DLQView struct {
	Backend  string                `json:"backend"`
	Messages []sqsqueue.DLQMessage `json:"messages"`
}

// DiscardedJob is a River job that exhausted its attempts.
type DiscardedJob struct {
	ID          int64           `json:"id"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Args        json.RawMessage `json:"args"`
	Attempt     int             `json:"attempt"`
	LastError   string          `json:"lastError,omitempty"`
	FinalizedAt *time.Time      `json:"finalizedAt,omitempty"`
}

var errAdminOnly = problem(http.StatusForbidden, "FORBIDDEN", "only the platform admin may do this")

// scope is the part of the platform an operator may see.
func scope(ctx context.Context) ops.Scope {
	who := caller(ctx)
	if who.Admin {
		return ops.Scope{}
	}
	return ops.Scope{TenantID: who.TenantID}
}

// opsQueues serves GET /v1/ops/queues.
func (s *Server) opsQueues(ctx context.Context, _ *struct{}) (*struct{ Body *ops.Report }, error) {
	rep, err := s.Reporter.Report(ctx, scope(ctx))
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *ops.Report }{rep}, nil
}

// opsDlq serves GET /v1/ops/dlq.
func (s *Server) opsDlq(ctx context.Context, in *struct {
	Limit int `query:"limit" minimum:"1" maximum:"100" default:"20"`
}) (*struct{ Body DLQView }, error) {
	view := DLQView{Backend: s.Reporter.Backend(), Messages: []sqsqueue.DLQMessage{}}
	if s.DLQ == nil {
		return &struct{ Body DLQView }{view}, nil
	}
	msgs, err := s.DLQ.PeekDLQ(ctx, in.Limit)
	if err != nil {
		return nil, s.toProblem(err)
	}
	sc := scope(ctx)
	for _, m := range msgs {
		if sc.TenantID == uuid.Nil || (m.Request != nil && m.Request.TenantID == sc.TenantID) {
			view.Messages = append(view.Messages, m)
		}
	}
	return &struct{ Body DLQView }{view}, nil
}

// opsDlqRedrive serves POST /v1/ops/dlq/redrive.
func (s *Server) opsDlqRedrive(ctx context.Context, _ *struct{}) (*struct{ Body Redriven }, error) {
	if !caller(ctx).Admin {
		return nil, errAdminOnly
	}
	if s.DLQ == nil {
		return nil, problem(http.StatusConflict, "NO_DEAD_LETTER_QUEUE",
			"the River backend has no dead-letter queue; retry discarded jobs instead")
	}
	moved, err := s.DLQ.Redrive(ctx)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body Redriven }{Redriven{moved}}, nil
}

// opsRiverDiscarded serves GET /v1/ops/river/discarded.
func (s *Server) opsRiverDiscarded(ctx context.Context, in *struct {
	Limit int `query:"limit" minimum:"1" maximum:"500" default:"50"`
}) (*struct{ Body DiscardedJobs }, error) {
	res, err := s.River.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateDiscarded).First(in.Limit))
	if err != nil {
		return nil, s.toProblem(err)
	}
	sc := scope(ctx)
	out := &struct{ Body DiscardedJobs }{DiscardedJobs{Jobs: []DiscardedJob{}}}
	for _, j := range res.Jobs {
		if sc.TenantID != uuid.Nil && !s.jobOfTenant(ctx, j, sc.TenantID) {
			continue
		}
		d := DiscardedJob{ID: j.ID, Kind: j.Kind, Queue: j.Queue, Args: j.EncodedArgs, Attempt: j.Attempt, FinalizedAt: j.FinalizedAt}
		if n := len(j.Errors); n > 0 {
			d.LastError = j.Errors[n-1].Error
		}
		out.Body.Jobs = append(out.Body.Jobs, d)
	}
	return out, nil
}

// opsRiverRetry serves POST /v1/ops/river/jobs/{id}/retry.
func (s *Server) opsRiverRetry(ctx context.Context, in *struct {
	ID int64 `path:"id"`
}) (*struct{ Body RetriedJob }, error) {
	if !caller(ctx).Admin {
		return nil, errAdminOnly
	}
	j, err := s.River.JobRetry(ctx, in.ID)
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return nil, problem(http.StatusNotFound, "NOT_FOUND", "no such job")
		}
		return nil, s.toProblem(err)
	}
	return &struct{ Body RetriedJob }{RetriedJob{ID: j.ID, State: string(j.State)}}, nil
}

// riverUI is River's UI, served under /ops/river to the platform admin; nil
// without a River client.
func (s *Server) riverUI() fiber.Handler {
	if s.River == nil {
		return nil
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(s.River, nil),
		Logger:    s.Logger,
		Prefix:    "/ops/river",
	})
	if err != nil {
		s.Logger.Error("river ui unavailable", "error", err)
		return nil
	}
	s.riverUIHandler = h
	return adaptor.HTTPHandler(h)
}

// jobOfTenant reports whether a claim job belongs to one of the tenant's
// products; other jobs are the platform's.
func (s *Server) jobOfTenant(ctx context.Context, j *rivertype.JobRow, tenantID uuid.UUID) bool {
	if j.Kind != "claim_product" {
		return false
	}
	var args struct {
		ProductID uuid.UUID `json:"product_id"`
	}
	if json.Unmarshal(j.EncodedArgs, &args) != nil {
		return false
	}
	p, err := s.productCache.Get(ctx, args.ProductID)
	return err == nil && p.TenantID == tenantID
}

// sameOriginJSON refuses state changes to the River UI that a page on
// another site could make with the browser's cached Basic credentials: a
// form or a text/plain fetch needs no preflight, so a change must be JSON
// (which a cross-site page cannot send without CORS, never granted here) and
// must not come from another origin.
func sameOriginJSON(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	forbid := func(detail string) error {
		return c.Status(http.StatusForbidden).JSON(problem(http.StatusForbidden, "CROSS_SITE_REQUEST", detail), "application/problem+json")
	}
	mediaType, _, _ := strings.Cut(c.Get(fiber.HeaderContentType), ";")
	if !strings.EqualFold(strings.TrimSpace(mediaType), fiber.MIMEApplicationJSON) {
		return forbid("changes must be sent as application/json")
	}
	if site := c.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return forbid("changes must come from this site")
	}
	if origin := c.Get(fiber.HeaderOrigin); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, c.Hostname()) {
			return forbid("changes must come from this site")
		}
	}
	return c.Next()
}

// requireAdminBasic guards the River UI, a browser page, with the platform
// admin key as a Bearer token or as the password of HTTP Basic auth. The UI
// shows every tenant's jobs, so tenant keys are not enough.
func (s *Server) requireAdminBasic(c *fiber.Ctx) error {
	key := ""
	auth := c.Get(fiber.HeaderAuthorization)
	if token, ok := strings.CutPrefix(auth, "Bearer "); ok {
		key = token
	} else if r, err := adaptor.ConvertRequest(c, false); err == nil {
		_, key, _ = r.BasicAuth()
	}
	if key == "" && s.Sessions != nil {
		// The console's platform-admin session opens the River UI too (its
		// own calls are same-origin JSON, and the cookie is SameSite=Strict).
		if token := c.Cookies(sessionCookie); token != "" {
			if sess, err := s.consoleSession(c.UserContext(), strings.Clone(token)); err == nil && sess.Admin {
				return c.Next()
			}
		}
	}
	if !s.isAdminKey(key) {
		c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="BoxOffice operations"`)
		c.Set(fiber.HeaderContentType, "application/problem+json")
		return c.Status(http.StatusUnauthorized).JSON(problem(http.StatusUnauthorized, "UNAUTHORIZED",
			"the River UI needs the platform admin key (HTTP Basic password or Bearer)"), "application/problem+json")
	}
	return c.Next()
}

// Redriven says how many dead letters went back to the claim queue.
type Redriven struct {
	Moved int `json:"moved"`
}

// DiscardedJobs are River jobs that gave up.
type DiscardedJobs struct {
	Jobs []DiscardedJob `json:"jobs"`
}

// RetriedJob is a discarded job sent back to work.
type RetriedJob struct {
	ID    int64  `json:"id"`
	State string `json:"state"`
}
