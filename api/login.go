package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"boxoffice/internal/login"
	"boxoffice/internal/tenant"
)

// loginTokenTTL is how long a buyer token from a login code lasts.
const loginTokenTTL = 2 * time.Hour

// LoginBody asks for a code: one of email or phone.
type LoginBody struct {
	Email string `json:"email,omitempty" maxLength:"254" doc:"Send the code by e-mail"`
	Phone string `json:"phone,omitempty" maxLength:"32" doc:"Send the code by SMS; international form, +351912345678"`
}

// VerifyBody exchanges a code for a buyer token.
type VerifyBody struct {
	Email string `json:"email,omitempty" maxLength:"254"`
	Phone string `json:"phone,omitempty" maxLength:"32"`
	Code  string `json:"code" pattern:"^[0-9]{6}$" doc:"The six digits received"`
}

// LoginToken is a buyer token from a login code.
type LoginToken struct {
	BuyerToken string    `json:"buyerToken" doc:"Send as Authorization: Bearer … wherever a buyer token is accepted"`
	BuyerID    string    `json:"buyerId" doc:"Stable for this e-mail address or phone number in this store"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// storeTenant resolves a store's slug to its tenant.
func (s *Server) storeTenant(ctx context.Context, slug string) (*profileView, error) {
	v, err := s.profiles.Get(ctx, slug)
	if err != nil {
		return nil, s.toProblem(err)
	}
	setOwner(ctx, v.tenantID)
	return v, nil
}

// startLogin serves POST /v1/stores/{tenantSlug}/login.
func (s *Server) startLogin(ctx context.Context, in *struct {
	StorePath
	Body LoginBody
}) (*struct {
	Status int
	Body   struct {
		Message string `json:"message"`
	}
}, error) {
	store, err := s.storeTenant(ctx, in.Slug)
	if err != nil {
		return nil, err
	}
	id := login.Identifier{Email: strings.TrimSpace(in.Body.Email), Phone: strings.TrimSpace(in.Body.Phone)}
	key, err := id.Normalize()
	if err != nil {
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_IDENTIFIER", err.Error())
	}
	switch {
	case id.Email != "" && s.Mailer == nil, id.Phone != "" && s.SMS == nil:
		return nil, problem(http.StatusServiceUnavailable, "LOGIN_UNAVAILABLE", "this server cannot send codes that way")
	}
	code, err := s.Login.Issue(ctx, store.tenantID, key)
	if errors.Is(err, login.ErrTooManySends) {
		p := problem(http.StatusTooManyRequests, "RATE_LIMITED", err.Error())
		p.Headers = http.Header{"Retry-After": {"600"}}
		return nil, p
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	text := "Your " + store.body.Name + " login code is " + code + ". It expires in 10 minutes. If you did not ask for it, ignore this message."
	if id.Email != "" {
		err = s.Mailer.Send(id.Email, store.body.Name+" login code", text)
	} else {
		err = s.SMS.SendSMS(ctx, strings.TrimPrefix(key, "phone:"), text)
	}
	if err != nil {
		// The answer stays the same: whether a code could be delivered
		// tells nothing the caller may know. The code itself is never
		// logged.
		s.Logger.Warn("login code not delivered", "store", in.Slug, "channel", strings.SplitN(key, ":", 2)[0], "error", err)
	}
	out := &struct {
		Status int
		Body   struct {
			Message string `json:"message"`
		}
	}{Status: http.StatusAccepted}
	out.Body.Message = "if this address can receive it, a code is on its way"
	return out, nil
}

// verifyLogin serves POST /v1/stores/{tenantSlug}/login/verify.
func (s *Server) verifyLogin(ctx context.Context, in *struct {
	StorePath
	Body VerifyBody
}) (*secretOutput[LoginToken], error) {
	store, err := s.storeTenant(ctx, in.Slug)
	if err != nil {
		return nil, err
	}
	key, err := login.Identifier{Email: strings.TrimSpace(in.Body.Email), Phone: strings.TrimSpace(in.Body.Phone)}.Normalize()
	if err != nil {
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_IDENTIFIER", err.Error())
	}
	buyer, err := s.Login.Verify(ctx, store.tenantID, key, in.Body.Code)
	if errors.Is(err, login.ErrInvalidCode) {
		return nil, problem(http.StatusUnauthorized, "INVALID_CODE", err.Error())
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	secrets, err := s.Tenants.BuyerTokenSecrets(ctx, store.tenantID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	token, err := tenant.SignBuyerToken(secrets[0], store.tenantID, buyer, loginTokenTTL)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return shownOnce(LoginToken{BuyerToken: token, BuyerID: buyer,
		ExpiresAt: time.Now().Add(loginTokenTTL).UTC().Truncate(time.Second)}), nil
}
