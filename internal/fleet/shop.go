package fleet

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"boxoffice/internal/proctest"
)

// Shoppers buy one number each, the whole way: reserve, wait for the hold,
// order, wait for the confirmation — each step retried with its
// Idempotency-Key through 503s and dropped connections, as a store's page
// does. Any other 5xx fails the test.
type Shoppers struct {
	f       *Fleet
	product string
	email   bool
	// On503, when set, sees every 503 answer (its problem body).
	On503 func(method, path string, problem map[string]any)

	mu        sync.Mutex
	confirmed []Confirmed
	accepted  []time.Time
	refused   atomic.Int64
	stop      atomic.Bool
	next      atomic.Int64
	wg        sync.WaitGroup
}

// Confirmed is an order a shopper saw CONFIRMED, and when.
type Confirmed struct {
	Order string
	At    time.Time
}

// Shop starts n shoppers on product; with email their orders give an
// address, so tickets are mailed. Stop ends them.
func (f *Fleet) Shop(product string, n int, email bool, on503 func(method, path string, problem map[string]any)) *Shoppers {
	s := &Shoppers{f: f, product: product, email: email, On503: on503}
	for range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for !s.stop.Load() {
				s.buy(int(s.next.Add(1)))
			}
		}()
	}
	return s
}

// Stop lets every shopper finish the purchase in hand and returns.
func (s *Shoppers) Stop() {
	s.stop.Store(true)
	s.wg.Wait()
}

// ConfirmedAfter counts the orders confirmed after t.
func (s *Shoppers) ConfirmedAfter(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.confirmed {
		if c.At.After(t) {
			n++
		}
	}
	return n
}

// Confirmations are every order seen CONFIRMED.
func (s *Shoppers) Confirmations() []Confirmed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Confirmed(nil), s.confirmed...)
}

// FirstAcceptAfter is when the first reservation after t was accepted
// (zero if none).
func (s *Shoppers) FirstAcceptAfter(t time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.accepted {
		if a.After(t) {
			return a
		}
	}
	return time.Time{}
}

// Refused counts the 503 answers.
func (s *Shoppers) Refused() int64 { return s.refused.Load() }

func (s *Shoppers) call(method, path, token string, body any, headers ...string) (int, map[string]any, error) {
	code, res, err := s.f.Call(method, path, token, body, headers...)
	if err == nil && code == http.StatusServiceUnavailable {
		s.refused.Add(1)
		if s.On503 != nil {
			s.On503(method, path, res)
		}
	}
	if err == nil && code >= 500 && code != http.StatusServiceUnavailable {
		s.f.t.Errorf("%s %s: %d %v", method, path, code, res)
	}
	return code, res, err
}

// retry runs step until it succeeds, for two minutes at most.
func (s *Shoppers) retry(what string, step func() (bool, error)) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		done, err := step()
		if done {
			return
		}
		if time.Now().After(deadline) {
			s.f.t.Errorf("%s: no success within 2 minutes (last error %v)", what, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Shoppers) buy(i int) {
	token := s.f.BuyerToken(fmt.Sprintf("shopper-%d", i))
	var status string
	s.retry("reserve", func() (bool, error) {
		code, r, err := s.call(http.MethodPost, "/v1/products/"+s.product+"/reservations", token,
			map[string]any{"quantity": 1}, "Idempotency-Key", fmt.Sprintf("r-%d", i))
		if err == nil && Took(code) {
			status, _ = r["statusUrl"].(string)
			s.mu.Lock()
			s.accepted = append(s.accepted, time.Now())
			s.mu.Unlock()
			return true, nil
		}
		return false, err
	})
	var hold string
	s.retry("hold", func() (bool, error) {
		code, st, err := s.call(http.MethodGet, status, token, nil)
		if err == nil && code == http.StatusOK && st["status"] == "HELD" {
			hold, _ = st["holdId"].(string)
			return true, nil
		}
		return false, err
	})
	body := map[string]any{"holdId": hold, "paymentMethod": "sim_ok"}
	if s.email {
		body["email"] = fmt.Sprintf("shopper-%d@example.com", i)
	}
	var order string
	s.retry("order", func() (bool, error) {
		code, o, err := s.call(http.MethodPost, "/v1/orders", token, body, "Idempotency-Key", fmt.Sprintf("o-%d", i))
		if err == nil && Took(code) {
			order, _ = o["id"].(string)
			return true, nil
		}
		return false, err
	})
	s.retry("confirmation", func() (bool, error) {
		code, o, err := s.call(http.MethodGet, "/v1/orders/"+order, token, nil)
		if err == nil && code == http.StatusOK && o["status"] == "CONFIRMED" {
			s.mu.Lock()
			s.confirmed = append(s.confirmed, Confirmed{order, time.Now()})
			s.mu.Unlock()
			return true, nil
		}
		return false, err
	})
}

// checkoutEnv is what the fleet's processes need to take payments from
// the simulator on pspPort (see startPSP).
func checkoutEnv(pspPort int, secret string) proctest.Env {
	return proctest.Env{
		"BOXOFFICE_PSP_SIM_URL": fmt.Sprintf("http://127.0.0.1:%d", pspPort), "BOXOFFICE_WEBHOOK_SECRETS": secret,
		"BOXOFFICE_TICKET_SECRET": "ticket-secret",
	}
}

// startPSP runs the payment simulator on pspPort, its webhooks signed with
// secret and sent to the fleet's API, 100 ms a call; more flags override
// those (the last of a flag wins).
func (f *Fleet) startPSP(pspPort int, secret string, more ...string) {
	f.t.Helper()
	args := append([]string{"psp-sim", "-addr", fmt.Sprintf("127.0.0.1:%d", pspPort),
		"-webhook-url", f.API + "/v1/webhooks/payments/sim", "-webhook-secret", secret, "-latency", "100ms"}, more...)
	psp := proctest.Start(f.t, "psp-sim", f.Env, args...)
	psp.WaitLog("payment simulator listening", 30*time.Second)
}
