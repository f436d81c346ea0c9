package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/letter"
	"boxoffice/internal/login"
	"boxoffice/internal/tenant"
	"boxoffice/internal/waitingroom"
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
	Challenge string `header:"X-Queue-Challenge" maxLength:"2000" doc:"The challenge from POST /login/challenge (when the server asks for proof of work)"`
	Solution  string `header:"X-Queue-Solution" maxLength:"64" doc:"s such that SHA-256(challenge + \":\" + s) starts with the challenge's zero bits"`
	Body      LoginBody
}) (*struct {
	Status int
	Body   LoginStarted
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
	case id.Phone != "" && !store.body.SendsSMSTo(strings.TrimPrefix(key, "phone:")):
		return nil, problem(http.StatusUnprocessableEntity, "SMS_COUNTRY_NOT_ALLOWED",
			"this store does not send codes by SMS to that country; use your e-mail address")
	}
	if err := s.loginWork(store, key, in.Challenge, in.Solution); err != nil {
		return nil, err
	}
	if id.Phone != "" {
		within, err := s.Login.CountSMS(ctx, store.tenantID, s.SMSDailyCap)
		if err != nil {
			return nil, s.toProblem(err)
		}
		if !within {
			p := problem(http.StatusTooManyRequests, "SMS_CAP_REACHED", "this store has sent all the SMS codes it may today; use your e-mail address")
			p.Headers = http.Header{"Retry-After": {"3600"}}
			return nil, p
		}
	}
	code, err := s.Login.Issue(ctx, store.tenantID, key, clientNetwork(clientOf(ctx)))
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
		err = s.mailCode(id.Email, store.body, code)
	} else {
		err = s.SMS.SendSMS(ctx, strings.TrimPrefix(key, "phone:"), text)
	}
	if err != nil {
		// The answer stays the same: whether a code could be delivered
		// tells nothing the caller may know. The code itself is never
		// logged.
		s.Logger.Warn("login code not delivered", "store", in.Slug, "channel", strings.SplitN(key, ":", 2)[0], "error", err)
	}
	return &struct {
		Status int
		Body   LoginStarted
	}{http.StatusAccepted, LoginStarted{"if this address can receive it, a code is on its way"}}, nil
}

// LoginStarted answers a login's start, the same whether or not a code
// was sent.
type LoginStarted struct {
	Message string `json:"message"`
}

// verifyLogin serves POST /v1/stores/{tenantSlug}/login/verify.
func (s *Server) verifyLogin(ctx context.Context, in *struct {
	StorePath
	Body VerifyBody
}) (*secretOutput[LoginToken], error) {
	store, key, err := s.loginTarget(ctx, in.Slug, in.Body.Email, in.Body.Phone)
	if err != nil {
		return nil, err
	}
	buyer, err := s.Login.Verify(ctx, store.tenantID, key, clientNetwork(clientOf(ctx)), in.Body.Code)
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

// loginChallengeSubject binds a login challenge to the store and the
// identifier it is for.
func loginChallengeSubject(key string) string { return "login:" + key }

// loginChallenge serves POST /v1/stores/{tenantSlug}/login/challenge.
func (s *Server) loginChallenge(ctx context.Context, in *struct {
	StorePath
	Body LoginBody
}) (*struct {
	CacheControl string `header:"Cache-Control"`
	Body         waitingroom.Challenge
}, error) {
	store, key, err := s.loginTarget(ctx, in.Slug, in.Body.Email, in.Body.Phone)
	if err != nil {
		return nil, err
	}
	var c waitingroom.Challenge
	if s.LoginChallengeBits > 0 && s.WaitingRoom != nil {
		c = s.WaitingRoom.Tokens().Challenge(store.tenantID, uuid.Nil, loginChallengeSubject(key), s.LoginChallengeBits)
	}
	return &struct {
		CacheControl string `header:"Cache-Control"`
		Body         waitingroom.Challenge
	}{"no-store", c}, nil
}

// loginWork checks the proof of work a login start must carry when the
// server asks for one: solved for this store and identifier.
func (s *Server) loginWork(store *profileView, key, challenge, solution string) error {
	if s.LoginChallengeBits <= 0 || s.WaitingRoom == nil {
		return nil
	}
	if challenge == "" {
		return problem(http.StatusForbidden, "CHALLENGE_REQUIRED",
			"solve POST /v1/stores/{tenantSlug}/login/challenge and send X-Queue-Challenge and X-Queue-Solution")
	}
	if err := s.WaitingRoom.Tokens().VerifySolution(challenge, solution, store.tenantID, uuid.Nil,
		loginChallengeSubject(key), s.LoginChallengeBits); err != nil {
		return problem(http.StatusForbidden, "CHALLENGE_FAILED", err.Error())
	}
	return nil
}

// loginTarget is the store and the canonical address key a login call
// names.
func (s *Server) loginTarget(ctx context.Context, slug, email, phone string) (*profileView, string, error) {
	store, err := s.storeTenant(ctx, slug)
	if err != nil {
		return nil, "", err
	}
	key, err := loginKey(email, phone)
	return store, key, err
}

// loginKey is the canonical key of the address a login call names, or a
// 422 INVALID_IDENTIFIER.
func loginKey(email, phone string) (string, error) {
	key, err := login.Identifier{Email: strings.TrimSpace(email), Phone: strings.TrimSpace(phone)}.Normalize()
	if err != nil {
		return "", problem(http.StatusUnprocessableEntity, "INVALID_IDENTIFIER", err.Error())
	}
	return key, nil
}

// mailCode mails a login code in the store's name, look and language.
func (s *Server) mailCode(to string, store *tenant.Profile, code string) error {
	b := letter.BrandOf(store)
	w := b.Words
	l, err := b.Compose(to, letter.Content{Subject: w.T("codeSubject", "store", store.Name), Heading: w.T("codeHeading"),
		Intro: []string{w.T("codeIntro", "store", store.Name)}, Codes: []string{code}})
	if err != nil {
		return err
	}
	return s.Mailer.SendLetter(l)
}
