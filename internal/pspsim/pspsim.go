// Package pspsim is BoxOffice's stateful payment provider simulator: an HTTP
// service with authorize, capture, void, refund and lookup, idempotency keys,
// configurable latency, test payment methods that misbehave the ways real
// providers do, and HMAC-signed webhooks that can arrive duplicated, delayed
// or out of order. It is the provider of `make run` and of the tests.
package pspsim

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"boxoffice/internal/payment"
)

// Test payment methods.
const (
	MethodOK                = "sim_ok"
	MethodDecline           = "sim_decline"
	MethodTimeoutAfterAuth  = "sim_timeout_after_auth" // authorizes, then the response is lost
	MethodError500          = "sim_error_500"          // first call 500 without acting, then fine
	MethodRateLimited       = "sim_rate_limited"       // first call 429, then fine
	MethodCaptureFails      = "sim_capture_fails"      // authorizes; the first two captures fail with 500
	MethodRefundTimeout     = "sim_refund_timeout"     // a refund takes effect, then its first answers are lost
	MethodRefundFails       = "sim_refund_fails"       // the first refund is refused (402) without acting; the next succeeds
	captureFailuresPerOrder = 2
)

// Config tunes the simulator.
type Config struct {
	// Latency is added to every call, before it is handled.
	Latency time.Duration
	// ResponseDelay holds each response back after the call took effect, so
	// webhooks can overtake the API response.
	ResponseDelay time.Duration
	// WebhookURL receives events; empty sends none.
	WebhookURL string
	// WebhookSecret signs events (payment.SignatureHeader).
	WebhookSecret string
	// WebhookDuplicates sends every event this many extra times.
	WebhookDuplicates int
	// WebhookDelay delays every event (each copy by a random share of it, so
	// copies and consecutive events can arrive out of order).
	WebhookDelay time.Duration
	Logger       *slog.Logger
}

// Server is the simulator.
type Server struct {
	cfg    Config
	client *http.Client

	mu       sync.Mutex
	byKey    map[string]*record // authorization idempotency key -> payment
	byID     map[string]*record
	refunds  map[string]*refundRecord // refund idempotency key -> refund
	calls    map[string]int           // misbehaviour counters by key and operation
	opResult map[string]payment.Payment
	wg       sync.WaitGroup
	inFlight atomic.Int64
}

// InFlight is how many API calls the simulator is serving right now.
func (s *Server) InFlight() int64 { return s.inFlight.Load() }

type record struct {
	p        payment.Payment
	method   string
	params   string // for idempotency: same key must come with the same params
	refunded int64  // how much of the captured amount was given back
}

type refundRecord struct {
	r      payment.Refund
	params string
}

// New returns a simulator.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, client: &http.Client{Timeout: 10 * time.Second},
		byKey: map[string]*record{}, byID: map[string]*record{}, refunds: map[string]*refundRecord{}, calls: map[string]int{}, opResult: map[string]payment.Payment{}}
}

// Close waits for webhooks in flight.
func (s *Server) Close() { s.wg.Wait() }

// Handler serves the simulator's API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/authorizations", s.authorize)
	mux.HandleFunc("GET /v1/authorizations", s.lookup)
	mux.HandleFunc("GET /v1/payments/{id}", s.get)
	mux.HandleFunc("POST /v1/payments/{id}/{op}", s.operate)
	mux.HandleFunc("POST /v1/payments/{id}/refunds", s.refund)
	mux.HandleFunc("GET /v1/refunds", s.lookupRefund)
	mux.HandleFunc("POST /v1/payments/{id}/webhooks/resend", s.resend)
	// Its container's health check: the image's asks /livez (compose runs
	// the simulator on the port the other roles' metrics use).
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		if s.cfg.Latency > 0 {
			select {
			case <-time.After(s.cfg.Latency):
			case <-r.Context().Done():
				return
			}
		}
		mux.ServeHTTP(&delayedWriter{ResponseWriter: w, delay: s.cfg.ResponseDelay}, r)
	})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var in struct {
		Amount        int64  `json:"amount"`
		Currency      string `json:"currency"`
		PaymentMethod string `json:"paymentMethod"`
		OrderID       string `json:"orderId"`
	}
	if key == "" || json.NewDecoder(r.Body).Decode(&in) != nil || in.Amount <= 0 || in.Currency == "" {
		writeError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	params := fmt.Sprintf("%s|%s|%d", in.PaymentMethod, in.Currency, in.Amount)

	s.mu.Lock()
	if rec, ok := s.byKey[key]; ok {
		s.mu.Unlock()
		if rec.params != params {
			writeError(w, http.StatusUnprocessableEntity, "idempotency_key_reused")
			return
		}
		writePayment(w, rec.p)
		return
	}
	s.calls["auth:"+key]++
	first := s.calls["auth:"+key] == 1
	switch {
	case in.PaymentMethod == MethodError500 && first:
		s.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "internal_error")
		return
	case in.PaymentMethod == MethodRateLimited && first:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "rate_limited")
		return
	}
	rec := &record{method: in.PaymentMethod, params: params, p: payment.Payment{
		ID: "pay_" + randomHex(8), IdempotencyKey: key, Status: payment.StatusAuthorized,
		AmountCents: in.Amount, Currency: in.Currency,
	}}
	if in.PaymentMethod == MethodDecline {
		rec.p.Status, rec.p.DeclineReason = payment.StatusDeclined, "card_declined"
	}
	s.byKey[key], s.byID[rec.p.ID] = rec, rec
	p := rec.p
	s.mu.Unlock()
	s.emit("payment."+p.Status, p)

	if in.PaymentMethod == MethodTimeoutAfterAuth && first {
		// The authorization stands; the caller never hears of it.
		if !cut(w) {
			<-r.Context().Done()
		}
		return
	}
	writePayment(w, p)
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	s.writeFound(w, s.byKey, r.URL.Query().Get("idempotency_key"))
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.writeFound(w, s.byID, r.PathValue("id"))
}

// find copies the payment stored under k in index, under the lock.
func (s *Server) find(index map[string]*record, k string) (payment.Payment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := index[k]
	if !ok {
		return payment.Payment{}, false
	}
	return rec.p, true
}

func (s *Server) writeFound(w http.ResponseWriter, index map[string]*record, k string) {
	p, ok := s.find(index, k)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found")
		return
	}
	writePayment(w, p)
}

// transitions are the state rules: operation -> {from, to}.
var transitions = map[string][2]string{
	"capture": {payment.StatusAuthorized, payment.StatusCaptured},
	"void":    {payment.StatusAuthorized, payment.StatusVoided},
}

// operate applies capture, void or refund with the usual state rules.
// Repeating an operation that already happened returns the payment as is.
func (s *Server) operate(w http.ResponseWriter, r *http.Request) {
	op := r.PathValue("op")
	t, known := transitions[op]
	from, to := t[0], t[1]
	if !known {
		writeError(w, http.StatusNotFound, "unknown_operation")
		return
	}
	s.mu.Lock()
	rec, ok := s.byID[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "not_found")
		return
	}
	if op == "capture" && rec.method == MethodCaptureFails && rec.p.Status == from {
		s.calls["capture:"+rec.p.ID]++
		if s.calls["capture:"+rec.p.ID] <= captureFailuresPerOrder {
			s.mu.Unlock()
			writeError(w, http.StatusInternalServerError, "capture_failed")
			return
		}
	}
	switch rec.p.Status {
	case to:
		p := rec.p
		s.mu.Unlock()
		writePayment(w, p)
		return
	case from:
		rec.p.Status = to
	default:
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "invalid_state_"+rec.p.Status)
		return
	}
	p := rec.p
	s.mu.Unlock()
	s.emit("payment."+p.Status, p)
	writePayment(w, p)
}

// refund gives back some or all of a captured payment, once per key: the
// same key with the same amount returns the same refund, with another
// amount 422. The refunds of a payment never exceed what was captured; the
// payment is refunded once all of it is.
func (s *Server) refund(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var in struct {
		Amount int64 `json:"amount"`
	}
	if key == "" || json.NewDecoder(r.Body).Decode(&in) != nil || in.Amount <= 0 {
		writeError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	params := fmt.Sprintf("%s|%d", r.PathValue("id"), in.Amount)
	out, status, lost := s.makeRefund(r.PathValue("id"), key, params, in.Amount)
	if status != http.StatusOK {
		writeError(w, status, out.FailureReason)
		return
	}
	if lost {
		// The refund stands; the caller gives up waiting and never hears
		// of it. (Cutting the connection instead would not do: Go's HTTP
		// client silently repeats a request that carries an
		// Idempotency-Key when a reused connection drops.)
		<-r.Context().Done()
		return
	}
	writeRefund(w, out)
}

// makeRefund decides a refund call under the lock: the refund (a replay of
// the key's, a refusal, or a new one — which sends payment.refunded once
// the payment is refunded in full), or an HTTP status other than 200 with
// its error code as the failure reason. lost is
// true when the answer is to be withheld: a sim_refund_timeout payment's
// first refund.
func (s *Server) makeRefund(paymentID, key, params string, amount int64) (out payment.Refund, status int, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.byID[paymentID]
	if !ok {
		return payment.Refund{FailureReason: "not_found"}, http.StatusNotFound, false
	}
	if rr, ok := s.refunds[key]; ok {
		if rr.params != params {
			return payment.Refund{FailureReason: "idempotency_key_reused"}, http.StatusUnprocessableEntity, false
		}
		return rr.r, http.StatusOK, false
	}
	switch {
	case rec.p.Status != payment.StatusCaptured:
		return payment.Refund{FailureReason: "invalid_state_" + rec.p.Status}, http.StatusConflict, false
	case rec.refunded+amount > rec.p.AmountCents:
		return payment.Refund{FailureReason: "amount_exceeds_captured"}, http.StatusUnprocessableEntity, false
	}
	s.calls["refund:"+paymentID]++
	first := s.calls["refund:"+paymentID] == 1
	if rec.method == MethodRefundFails && first {
		// Refused before acting: nothing is kept under the key, so the same
		// key may be tried again.
		return payment.Refund{IdempotencyKey: key, PaymentID: paymentID, AmountCents: amount, Currency: rec.p.Currency,
			Status: payment.RefundFailed, FailureReason: "insufficient_funds"}, http.StatusOK, false
	}
	rr := &refundRecord{params: params, r: payment.Refund{ID: "re_" + randomHex(8), PaymentID: paymentID,
		IdempotencyKey: key, AmountCents: amount, Currency: rec.p.Currency, Status: payment.RefundSucceeded}}
	s.refunds[key] = rr
	rec.refunded += amount
	if rec.refunded == rec.p.AmountCents {
		rec.p.Status = payment.StatusRefunded
		s.emit("payment."+rec.p.Status, rec.p)
	}
	return rr.r, http.StatusOK, rec.method == MethodRefundTimeout && first
}

func (s *Server) lookupRefund(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rr, ok := s.refunds[r.URL.Query().Get("idempotency_key")]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found")
		return
	}
	writeRefund(w, rr.r)
}

// Refunds returns every refund made, for tests that count them.
func (s *Server) Refunds() []payment.Refund {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]payment.Refund, 0, len(s.refunds))
	for _, rr := range s.refunds {
		out = append(out, rr.r)
	}
	return out
}

// cut closes the connection without an answer, as a timeout would leave
// it; false when the connection cannot be taken over.
func cut(w http.ResponseWriter) bool {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return false
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func writeRefund(w http.ResponseWriter, r payment.Refund) {
	w.Header().Set("Content-Type", "application/json")
	if r.Status == payment.RefundFailed {
		w.WriteHeader(http.StatusPaymentRequired)
	}
	_ = json.NewEncoder(w).Encode(r)
}

// resend sends the payment's current event again, times times (default 2)
// — on-demand duplicates for tests and demos.
func (s *Server) resend(w http.ResponseWriter, r *http.Request) {
	p, ok := s.find(s.byID, r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "not_found")
		return
	}
	for range 2 {
		s.emit("payment."+p.Status, p)
	}
	writePayment(w, p)
}

// emit sends an event (and its duplicates) to the webhook URL in the
// background, signed with the current time.
func (s *Server) emit(typ string, p payment.Payment) {
	if s.cfg.WebhookURL == "" {
		return
	}
	ev := payment.SimEvent{ID: "evt_" + randomHex(8), Type: typ, Created: time.Now().Unix(), Payment: p}
	body, _ := json.Marshal(ev)
	for range 1 + s.cfg.WebhookDuplicates {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if s.cfg.WebhookDelay > 0 {
				time.Sleep(time.Duration(rand.Int64N(int64(s.cfg.WebhookDelay) + 1)))
			}
			s.deliver(body)
		}()
	}
}

func (s *Server) deliver(body []byte) {
	for attempt := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.WebhookURL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(payment.SignatureHeader, payment.Sign(s.cfg.WebhookSecret, time.Now(), body))
		resp, err := s.client.Do(req)
		cancel()
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode < 300 {
				return
			}
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	s.cfg.Logger.Warn("webhook not delivered", "url", s.cfg.WebhookURL)
}

func writePayment(w http.ResponseWriter, p payment.Payment) {
	w.Header().Set("Content-Type", "application/json")
	if p.Status == payment.StatusDeclined {
		w.WriteHeader(http.StatusPaymentRequired)
	}
	_ = json.NewEncoder(w).Encode(p)
}

func writeError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// delayedWriter waits before writing the response headers.
type delayedWriter struct {
	http.ResponseWriter
	delay time.Duration
	once  sync.Once
}

func (d *delayedWriter) WriteHeader(code int) {
	d.once.Do(func() { time.Sleep(d.delay) })
	d.ResponseWriter.WriteHeader(code)
}

func (d *delayedWriter) Write(b []byte) (int, error) {
	d.once.Do(func() { time.Sleep(d.delay) })
	return d.ResponseWriter.Write(b)
}

// Hijack lets the timeout-after-authorization method cut the connection.
func (d *delayedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := d.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijacking not supported")
	}
	return hj.Hijack()
}
