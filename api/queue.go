package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/codes"
	"boxoffice/internal/db"
	"boxoffice/internal/login"
	"boxoffice/internal/product"
	"boxoffice/internal/waitingroom"
)

// JoinView answers a join.
type JoinView struct {
	QueueToken string  `json:"queueToken" doc:"Poll GET /v1/queue/{queueToken}; the same on every join"`
	Status     string  `json:"status"`
	Position   int64   `json:"position,omitempty" doc:"Absent while waiting for the draw at opening"`
	ETASeconds float64 `json:"etaSeconds,omitempty"`
	PollAfter  float64 `json:"pollAfterSeconds,omitempty" doc:"When to poll first, in seconds"`
}

var errAccessRequired = problem(http.StatusUnauthorized, "ACCESS_TOKEN_REQUIRED",
	"this product's waiting room is on: join the queue and send the access token you get when admitted as X-Access-Token")

// checkAccess enforces a product's waiting room: the buyer must present an
// access token for this tenant, product and buyer.
func (s *Server) checkAccess(ctx context.Context, p *product.Product, who principal, token string) error {
	if p.WaitingRoom == nil || !p.WaitingRoom.Enabled {
		return nil
	}
	if s.WaitingRoom == nil {
		// A room the deployment cannot run (no BOXOFFICE_ACCESS_TOKEN_SECRET)
		// must not turn into an open door.
		return problem(http.StatusServiceUnavailable, "WAITING_ROOM_UNAVAILABLE",
			"this product sells through a waiting room that this deployment is not running")
	}
	if token == "" {
		return errAccessRequired
	}
	if err := s.WaitingRoom.Tokens().VerifyAccess(token, who.TenantID, p.ID, who.BuyerID); err != nil {
		return problem(http.StatusForbidden, "ACCESS_TOKEN_INVALID", "the access token is invalid, expired, or for another product or buyer")
	}
	// A valid signature is not enough: the turn may be over.
	switch why, err := s.WaitingRoom.Ended(ctx, p.ID, who.BuyerID); {
	case err != nil:
		return s.toProblem(err)
	case why == waitingroom.StatusReclaimed:
		return problem(http.StatusForbidden, "ACCESS_RECLAIMED",
			"your turn went unused and was given to the next shopper in line")
	case why == waitingroom.StatusLeft:
		return problem(http.StatusForbidden, "ACCESS_ENDED", "you left the waiting room; this turn is over")
	case why == waitingroom.StatusRemoved:
		return problem(http.StatusForbidden, "ACCESS_REMOVED", "the organiser took this turn out of the waiting room")
	}
	return nil
}

// DrawPage is a page of the drawn order.
type DrawPage struct {
	Order  []uuid.UUID `json:"order"`
	Total  int         `json:"total" doc:"Entrants in the draw"`
	Offset int         `json:"offset"`
}

// JoinBody is what a join may carry.
type JoinBody struct {
	PresaleCode string `json:"presaleCode,omitempty" maxLength:"40" doc:"A presale code: joins the line of its presale (drawn when its window opens) instead of the general sale's"`
}

// joinQueue serves POST /v1/products/{id}/queue.
func (s *Server) joinQueue(ctx context.Context, in *struct {
	ProductPath
	Challenge string `header:"X-Queue-Challenge" maxLength:"2000" doc:"When the room asks for proof of work: the challenge from GET /queue/challenge"`
	Solution  string `header:"X-Queue-Solution" maxLength:"64" doc:"s such that SHA-256(challenge + \":\" + s) starts with the challenge's zero bits"`
	Body      *JoinBody
}) (*struct {
	Status int
	Body   JoinView
}, error) {
	who := caller(ctx)
	p, err := s.buyersProduct(ctx, in.ProductPath)
	if err != nil {
		return nil, err
	}
	if p.WaitingRoom != nil && p.WaitingRoom.ChallengeBits > 0 {
		if in.Challenge == "" {
			return nil, problem(http.StatusForbidden, "CHALLENGE_REQUIRED",
				"this waiting room asks for proof of work: solve GET /v1/products/{id}/queue/challenge and send X-Queue-Challenge and X-Queue-Solution")
		}
		if err := s.WaitingRoom.Tokens().VerifySolution(in.Challenge, in.Solution, who.TenantID, p.ID, who.BuyerID,
			p.WaitingRoom.ChallengeBits); err != nil {
			return nil, problem(http.StatusForbidden, "CHALLENGE_FAILED", err.Error())
		}
	}
	var e waitingroom.Entry
	var created bool
	if in.Body != nil && in.Body.PresaleCode != "" {
		e, created, err = s.joinPresale(ctx, p, who.BuyerID, in.Body.PresaleCode)
	} else {
		e, created, err = s.WaitingRoom.Join(ctx, who.TenantID, in.ID, who.BuyerID)
	}
	if errors.Is(err, waitingroom.ErrNoRoom) {
		return nil, problem(http.StatusNotFound, "NOT_FOUND", "no waiting room for this product")
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	token := s.WaitingRoom.QueueToken(e)
	st, err := s.WaitingRoom.Poll(ctx, token)
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := &struct {
		Status int
		Body   JoinView
	}{Status: http.StatusOK, Body: JoinView{QueueToken: token, Status: st.Status, Position: st.Position, ETASeconds: st.ETASeconds,
		PollAfter: st.PollAfter}}
	if created {
		out.Status = http.StatusCreated
	}
	return out, nil
}

// joinPresale puts a code holder in the line of the presale the code is
// for: the code is taken (one of its uses) in the same transaction.
func (s *Server) joinPresale(ctx context.Context, p *product.Product, buyerID, code string) (waitingroom.Entry, bool, error) {
	var e waitingroom.Entry
	var created bool
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		w, err := codes.LetInEarly(ctx, tx, p.TenantID, p.ID, buyerID, code)
		if err != nil {
			return err
		}
		e, created, err = s.WaitingRoom.JoinPresale(ctx, tx, p.TenantID, p.ID, buyerID, w.Opens, w.Closes)
		return err
	})
	return e, created, err
}

// queueChallenge serves GET /v1/products/{id}/queue/challenge.
func (s *Server) queueChallenge(ctx context.Context, in *struct {
	ProductPath
}) (*struct {
	CacheControl string `header:"Cache-Control"`
	Body         waitingroom.Challenge
}, error) {
	who := caller(ctx)
	p, err := s.productCache.Get(ctx, in.ID)
	if err == nil && (p.TenantID != who.TenantID || p.WaitingRoom == nil || p.HiddenFromBuyers()) {
		err = db.ErrNotFound
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct {
		CacheControl string `header:"Cache-Control"`
		Body         waitingroom.Challenge
	}{CacheControl: "no-store", Body: s.WaitingRoom.Tokens().Challenge(who.TenantID, p.ID, who.BuyerID, p.WaitingRoom.ChallengeBits)}, nil
}

// pollQueue serves GET /v1/queue/{token}.
func (s *Server) pollQueue(ctx context.Context, in *struct {
	Token string `path:"token" maxLength:"2000"`
}) (*struct {
	CacheControl string `header:"Cache-Control"`
	Body         *waitingroom.Status
}, error) {
	st, err := s.WaitingRoom.Poll(ctx, in.Token)
	if errors.Is(err, waitingroom.ErrBadToken) {
		return nil, problem(http.StatusUnauthorized, "INVALID_QUEUE_TOKEN", "the queue token is invalid or expired")
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	if claims, err := s.WaitingRoom.Tokens().ParseQueue(in.Token); err == nil {
		setOwner(ctx, claims.TenantID)
	}
	return &struct {
		CacheControl string `header:"Cache-Control"`
		Body         *waitingroom.Status
	}{CacheControl: "public, max-age=1", Body: st}, nil
}

// leaveQueue serves DELETE /v1/queue/{token}.
func (s *Server) leaveQueue(ctx context.Context, in *struct {
	Token string `path:"token" maxLength:"2000"`
}) (*struct{}, error) {
	if err := s.WaitingRoom.Leave(ctx, in.Token); err != nil {
		if errors.Is(err, waitingroom.ErrBadToken) {
			return nil, problem(http.StatusUnauthorized, "INVALID_QUEUE_TOKEN", "the queue token is invalid or expired")
		}
		return nil, s.toProblem(err)
	}
	return &struct{}{}, nil
}

// queueFairness serves GET /v1/products/{id}/queue/fairness.
func (s *Server) queueFairness(ctx context.Context, in *struct {
	ProductPath
}) (*struct{ Body *waitingroom.Fairness }, error) {
	// Drafts and rehearsals' shadows are no one's business: their opening
	// time and entrants are not published.
	if _, err := s.publicProduct(ctx, in.ID); err != nil {
		return nil, err
	}
	f, err := s.WaitingRoom.Fairness(ctx, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *waitingroom.Fairness }{f}, nil
}

// queueDraw serves GET /v1/products/{id}/queue/draw.
func (s *Server) queueDraw(ctx context.Context, in *struct {
	ProductPath
	Offset int       `query:"offset" minimum:"0" doc:"Positions to skip"`
	Limit  int       `query:"limit" minimum:"1" maximum:"10000" default:"1000" doc:"Entries per page"`
	Round  uuid.UUID `query:"round" format:"uuid" doc:"A presale round's id (from the fairness document): its draw instead of the general sale's"`
}) (*struct {
	CacheControl string `header:"Cache-Control"`
	Body         DrawPage
}, error) {
	if _, err := s.publicProduct(ctx, in.ID); err != nil {
		return nil, err
	}
	order, err := s.WaitingRoom.DrawOrder(ctx, in.ID)
	if in.Round != uuid.Nil {
		order, err = s.WaitingRoom.PresaleDrawOrder(ctx, in.ID, in.Round)
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := &struct {
		CacheControl string `header:"Cache-Control"`
		Body         DrawPage
	}{}
	out.Body = DrawPage{Order: []uuid.UUID{}, Total: len(order), Offset: in.Offset}
	if in.Offset < len(order) {
		out.Body.Order = order[in.Offset:min(in.Offset+in.Limit, len(order))]
	}
	if len(order) > 0 {
		out.CacheControl = "public, max-age=60" // a drawn order never changes
	}
	return out, nil
}

// AdmissionBody changes a waiting room's admission while its sale runs.
type AdmissionBody struct {
	ActiveShoppers  *int  `json:"activeShoppers,omitempty" minimum:"1" maximum:"1000000" doc:"L: shoppers served at once"`
	ShoppingSeconds *int  `json:"shoppingSeconds,omitempty" minimum:"1" maximum:"86400" doc:"W: seconds each spends; admission's pace is L ÷ W a second"`
	Paused          *bool `json:"paused,omitempty" doc:"true stops admission (the line and its order stay); false resumes it"`
}

// tuneAdmission serves PUT /v1/products/{id}/queue/admission.
func (s *Server) tuneAdmission(ctx context.Context, in *struct {
	ProductPath
	Body AdmissionBody
}) (*struct{ Body *waitingroom.QueueView }, error) {
	who := caller(ctx)
	p, err := s.Products.TuneAdmission(ctx, who.TenantID, in.ID, product.AdmissionChange{
		ActiveShoppers: in.Body.ActiveShoppers, ShoppingSeconds: in.Body.ShoppingSeconds, Paused: in.Body.Paused})
	if err != nil {
		return nil, s.toProblem(err)
	}
	s.productCache.Forget(p.ID)
	v, err := s.WaitingRoom.Queue(ctx, who.TenantID, in.ID, nil)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *waitingroom.QueueView }{v}, nil
}

// queueEntries serves GET /v1/products/{id}/queue/entries.
func (s *Server) queueEntries(ctx context.Context, in *struct {
	ProductPath
	Buyer string `query:"buyer" maxLength:"254" doc:"A buyer id, or the e-mail address a store shopper signs in with; absent: the next 50 in line"`
}) (*struct{ Body *waitingroom.QueueView }, error) {
	who := caller(ctx)
	var buyers []string
	if q := strings.TrimSpace(in.Buyer); q != "" {
		buyers = []string{q}
		if strings.Contains(q, "@") {
			id, err := login.FindBuyerByEmail(ctx, s.Pool, who.TenantID, q)
			if err != nil {
				return nil, s.toProblem(err)
			}
			if id != "" {
				buyers = append(buyers, id)
			}
		}
	}
	v, err := s.WaitingRoom.Queue(ctx, who.TenantID, in.ID, buyers)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *waitingroom.QueueView }{v}, nil
}

// removeQueueEntry serves DELETE /v1/products/{id}/queue/entries/{entryId}.
func (s *Server) removeQueueEntry(ctx context.Context, in *struct {
	ProductPath
	EntryID uuid.UUID `path:"entryId" format:"uuid"`
}) (*struct{}, error) {
	if err := s.WaitingRoom.RemoveEntry(ctx, caller(ctx).TenantID, in.ID, in.EntryID); err != nil {
		return nil, s.toProblem(err)
	}
	return nil, nil
}
