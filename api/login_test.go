package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/login"
	"boxoffice/internal/mail"
	"boxoffice/internal/sms"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

// texts is an SMS provider that keeps what it is given (the Twilio adapter
// itself is tested against an HTTP server speaking Twilio's API below).
type texts struct {
	mu   sync.Mutex
	sent map[string]string
}

func (x *texts) SendSMS(_ context.Context, to, body string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sent[to] = body
	return nil
}

var codeRE = regexp.MustCompile(`\b[0-9]{6}\b`)

// setupLogin builds the API with a real SMTP catcher and an SMS recorder.
func setupLogin(t *testing.T) (*testBundle, *mail.Sink, *texts) {
	t.Helper()
	sink, err := mail.NewSink("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	b := setup(t, testfix.Options{})
	b.mailer = &mail.Sender{Addr: sink.Addr(), From: "codes@boxoffice.test"}
	x := &texts{sent: map[string]string{}}
	b.sms = x
	b.server = b.newServer(t)
	return b, sink, x
}

// lastCode is the code of the last message to an address.
func lastCode(t *testing.T, sink *mail.Sink, to string) string {
	t.Helper()
	var code string
	require.Eventually(t, func() bool {
		for _, m := range sink.Messages() {
			if m.To == to {
				code = codeRE.FindString(m.Data)
			}
		}
		return code != ""
	}, 5*time.Second, 20*time.Millisecond)
	return code
}

func TestPasswordlessLogin(t *testing.T) {
	t.Parallel()
	b, sink, x := setupLogin(t)
	keyA, _ := b.storeTenant(t, "login-a")
	b.storeTenant(t, "login-b")
	start := func(store string, body map[string]any) response {
		return b.do(t, http.MethodPost, "/v1/stores/"+store+"/login", "", body)
	}
	verify := func(store string, body map[string]any) response {
		return b.do(t, http.MethodPost, "/v1/stores/"+store+"/login/verify", "", body)
	}

	// Success by e-mail: the token works as a buyer token, and the same
	// address is the same buyer next time.
	r := start("login-a", map[string]any{"email": "Ana@Example.com"})
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	code := lastCode(t, sink, "Ana@Example.com")
	r = verify("login-a", map[string]any{"email": "ana@example.com", "code": code})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	token, buyer := r.body["buyerToken"].(string), r.body["buyerId"].(string)
	require.Regexp(t, `^login_`, buyer)
	p := b.createProduct(t, keyA, map[string]any{})
	require.Equal(t, http.StatusAccepted, b.do(t, http.MethodPost, "/v1/products/"+p+"/reservations", token,
		map[string]any{"quantity": 1}, "Idempotency-Key", "k").status)
	// Reused: dead.
	requireProblem(t, verify("login-a", map[string]any{"email": "ana@example.com", "code": code}), 401, "INVALID_CODE")
	require.Equal(t, http.StatusAccepted, start("login-a", map[string]any{"email": "ana@example.com"}).status)
	r = verify("login-a", map[string]any{"email": "ana@example.com", "code": lastCode(t, sink, "ana@example.com")})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, buyer, r.body["buyerId"], "one address, one buyer")

	// By SMS, to a country the store sends to.
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPut, "/v1/store", keyA, map[string]any{"name": "Login A",
		"smsCountries": []string{"+351"}}).status)
	r = start("login-a", map[string]any{"phone": "+351 912 345 678"})
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	x.mu.Lock()
	smsCode := codeRE.FindString(x.sent["+351912345678"])
	x.mu.Unlock()
	require.NotEmpty(t, smsCode)
	// Another store's code is no code here.
	requireProblem(t, verify("login-b", map[string]any{"phone": "+351912345678", "code": smsCode}), 401, "INVALID_CODE")
	require.Equal(t, http.StatusOK, verify("login-a", map[string]any{"phone": "+351912345678", "code": smsCode}).status)

	// Five wrong tries kill the code, even the right one after them.
	require.Equal(t, http.StatusAccepted, start("login-a", map[string]any{"email": "bo@example.com"}).status)
	good := lastCode(t, sink, "bo@example.com")
	wrong := "000000"
	if good == wrong {
		wrong = "111111"
	}
	for range login.MaxTries {
		requireProblem(t, verify("login-a", map[string]any{"email": "bo@example.com", "code": wrong}), 401, "INVALID_CODE")
	}
	requireProblem(t, verify("login-a", map[string]any{"email": "bo@example.com", "code": good}), 401, "INVALID_CODE")

	// Expired.
	require.Equal(t, http.StatusAccepted, start("login-a", map[string]any{"email": "cy@example.com"}).status)
	late := lastCode(t, sink, "cy@example.com")
	b.env.Exec(t, `UPDATE login_codes SET expires_at = now() - interval '1 second' WHERE identifier = 'email:cy@example.com'`)
	requireProblem(t, verify("login-a", map[string]any{"email": "cy@example.com", "code": late}), 401, "INVALID_CODE")

	// Enumeration-safe: an address never seen answers exactly like a known
	// one; bad input is refused for its form only.
	known := start("login-a", map[string]any{"email": "ana@example.com"})
	unknown := start("login-a", map[string]any{"email": "nobody@example.com"})
	require.Equal(t, known.status, unknown.status)
	require.Equal(t, known.body, unknown.body)
	requireProblem(t, verify("login-a", map[string]any{"email": "ghost@example.com", "code": "123456"}), 401, "INVALID_CODE")
	requireProblem(t, start("login-a", map[string]any{"email": "not an address"}), 422, "INVALID_IDENTIFIER")
	requireProblem(t, start("login-a", map[string]any{"email": "a@example.com", "phone": "+351912345678"}), 422, "INVALID_IDENTIFIER")
	requireProblem(t, start("nobody", map[string]any{"email": "a@example.com"}), 404, "NOT_FOUND")

	// At most three codes per address per window.
	for range 2 {
		require.Equal(t, http.StatusAccepted, start("login-a", map[string]any{"email": "dee@example.com"}).status)
	}
	require.Equal(t, http.StatusAccepted, start("login-a", map[string]any{"email": "dee@example.com"}).status)
	requireProblem(t, start("login-a", map[string]any{"email": "dee@example.com"}), 429, "RATE_LIMITED")

	// Nothing about codes in the stored rows but their hashes.
	var n int
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM login_codes WHERE code_hash = convert_to($1, 'UTF8')`, good).Scan(&n))
	require.Zero(t, n)
}

func TestLoginRateLimitPerIP(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products, AdminKey: adminKey,
		Reservations: env.Service, Logger: env.Logger, Login: login.NewStore(env.Schema.Pool, env.Keys),
		RateLimits: api.RateLimits{LoginPerIP: 20}})
	b := &testBundle{env: env, server: srv}
	b.storeTenant(t, "login-ip")
	var last response
	for i := range 25 {
		last = b.do(t, http.MethodPost, "/v1/stores/login-ip/login/verify", "",
			map[string]any{"email": "x@example.com", "code": "123456"})
		if last.status == http.StatusTooManyRequests {
			require.GreaterOrEqual(t, i, 20)
			break
		}
	}
	requireProblem(t, last, 429, "RATE_LIMITED")
}

func TestTwilioAdapter(t *testing.T) {
	t.Parallel()
	var got struct {
		path, user, pass, to, from, body string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path = r.URL.Path
		got.user, got.pass, _ = r.BasicAuth()
		_ = r.ParseForm()
		got.to, got.from, got.body = r.PostForm.Get("To"), r.PostForm.Get("From"), r.PostForm.Get("Body")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"sid":"SM1","status":"queued"}`))
	}))
	defer srv.Close()
	tw := &sms.Twilio{AccountSID: "AC1", AuthToken: "secret", From: "+15005550006", BaseURL: srv.URL}
	require.NoError(t, tw.SendSMS(context.Background(), "+351912345678", "code 123456"))
	require.Equal(t, "/2010-04-01/Accounts/AC1/Messages.json", got.path)
	require.Equal(t, "AC1", got.user)
	require.Equal(t, "secret", got.pass)
	require.Equal(t, "+351912345678", got.to)
	require.Equal(t, "+15005550006", got.from)
	require.Equal(t, "code 123456", got.body)

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer bad.Close()
	tw.BaseURL = bad.URL
	require.ErrorContains(t, tw.SendSMS(context.Background(), "+351912345678", "x"), "401")
}

// A stranger cannot lock a buyer out of login or pump codes: sends and
// tries count per address and client (an IPv6 /64 being one client), the
// owner's newest code stays good while the stranger guesses, each code
// asked for costs a proof of work, and SMS go only to the store's
// countries, up to a daily cap.
func TestLoginCannotLockTheOwnerOut(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	sink, err := mail.NewSink("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	x := &texts{sent: map[string]string{}}
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products, AdminKey: adminKey,
		Reservations: env.Service, Logger: env.Logger, Login: login.NewStore(env.Schema.Pool, env.Keys), WaitingRoom: env.Rooms,
		Mailer: &mail.Sender{Addr: sink.Addr(), From: "codes@boxoffice.test"}, SMS: x,
		LoginChallengeBits: 6, SMSDailyCap: 2,
		RateLimits: api.RateLimits{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")}}})
	b := &testBundle{env: env, server: srv}
	key, _ := b.storeTenant(t, "owner-store")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPut, "/v1/store", key, map[string]any{"name": "Owner",
		"smsCountries": []string{"+351"}}).status)
	base := "/v1/stores/owner-store/login"
	start := func(client string, body map[string]any) response {
		ch := b.do(t, http.MethodPost, base+"/challenge", "", body, "X-Forwarded-For", client)
		require.Equal(t, http.StatusOK, ch.status, string(ch.raw))
		c, bits := ch.body["challenge"].(string), int(ch.body["bits"].(float64))
		require.Equal(t, 6, bits)
		return b.do(t, http.MethodPost, base, "", body, "X-Forwarded-For", client,
			"X-Queue-Challenge", c, "X-Queue-Solution", waitingroom.Solve(c, bits))
	}
	verify := func(client string, body map[string]any) response {
		return b.do(t, http.MethodPost, base+"/verify", "", body, "X-Forwarded-For", client)
	}
	owner := map[string]any{"email": "owner@example.com"}

	requireProblem(t, b.do(t, http.MethodPost, base, "", owner), 403, "CHALLENGE_REQUIRED")
	other := b.do(t, http.MethodPost, base+"/challenge", "", map[string]any{"email": "other@example.com"}).body["challenge"].(string)
	requireProblem(t, b.do(t, http.MethodPost, base, "", owner, "X-Queue-Challenge", other,
		"X-Queue-Solution", waitingroom.Solve(other, 6)), 403, "CHALLENGE_FAILED")

	// The stranger's three codes, then a 429 for the stranger only.
	for range login.MaxSends {
		require.Equal(t, http.StatusAccepted, start("203.0.113.9", owner).status)
	}
	requireProblem(t, start("203.0.113.9", owner), 429, "RATE_LIMITED")
	require.Equal(t, http.StatusAccepted, start("198.51.100.7", owner).status, "the owner is not locked out")
	code := lastCode(t, sink, "owner@example.com")
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	for range login.MaxTries + 2 {
		requireProblem(t, verify("203.0.113.9", map[string]any{"email": "owner@example.com", "code": wrong}), 401, "INVALID_CODE")
	}
	r := verify("198.51.100.7", map[string]any{"email": "owner@example.com", "code": code})
	require.Equal(t, http.StatusOK, r.status, "the owner's code outlived the stranger's guesses: %s", r.raw)

	// One IPv6 /64 is one client.
	for range login.MaxSends {
		require.Equal(t, http.StatusAccepted, start("2001:db8:1:2::1", map[string]any{"email": "six@example.com"}).status)
	}
	requireProblem(t, start("2001:db8:1:2::beef", map[string]any{"email": "six@example.com"}), 429, "RATE_LIMITED")
	require.Equal(t, http.StatusAccepted, start("2001:db8:1:3::1", map[string]any{"email": "six@example.com"}).status)

	// SMS: the store's countries only, and at most the daily cap.
	requireProblem(t, start("198.51.100.8", map[string]any{"phone": "+44 7700 900123"}), 422, "SMS_COUNTRY_NOT_ALLOWED")
	require.Equal(t, http.StatusAccepted, start("198.51.100.8", map[string]any{"phone": "+351912000001"}).status)
	require.Equal(t, http.StatusAccepted, start("198.51.100.9", map[string]any{"phone": "+351912000002"}).status)
	requireProblem(t, start("198.51.100.10", map[string]any{"phone": "+351912000003"}), 429, "SMS_CAP_REACHED")
	x.mu.Lock()
	require.Len(t, x.sent, 2)
	x.mu.Unlock()
}
