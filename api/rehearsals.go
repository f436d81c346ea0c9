package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"boxoffice/internal/rehearsal"
)

var errNoRehearsals = problem(http.StatusServiceUnavailable, "REHEARSALS_UNAVAILABLE", "this server runs no rehearsals")

// startRehearsal serves POST /v1/products/{id}/rehearsals.
func (s *Server) startRehearsal(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body rehearsal.Params
}) (*struct{ Body *rehearsal.Rehearsal }, error) {
	if s.Rehearsals == nil {
		return nil, errNoRehearsals
	}
	who := caller(ctx)
	p, err := s.Products.Get(ctx, who.TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	if p.RehearsalOf != nil {
		return nil, problem(http.StatusConflict, "REHEARSAL_SHADOW", "rehearse the real product, not a rehearsal's copy")
	}
	r, err := s.Rehearsals.Start(ctx, who.TenantID, p.ID, in.Body)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *rehearsal.Rehearsal }{r}, nil
}

// listRehearsals serves GET /v1/products/{id}/rehearsals.
func (s *Server) listRehearsals(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body []*rehearsal.Rehearsal }, error) {
	if s.Rehearsals == nil {
		return nil, errNoRehearsals
	}
	who := caller(ctx)
	if _, err := s.Products.Get(ctx, who.TenantID, in.ID); err != nil {
		return nil, s.toProblem(err)
	}
	list, err := s.Rehearsals.List(ctx, who.TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body []*rehearsal.Rehearsal }{list}, nil
}

// getRehearsal serves GET /v1/rehearsals/{id}.
func (s *Server) getRehearsal(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body *rehearsal.Rehearsal }, error) {
	if s.Rehearsals == nil {
		return nil, errNoRehearsals
	}
	r, err := s.Rehearsals.Get(ctx, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *rehearsal.Rehearsal }{r}, nil
}
