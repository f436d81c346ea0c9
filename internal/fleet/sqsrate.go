package fleet

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/tenant"
)

// SQSRate is what SQSAtRate measured.
type SQSRate struct {
	Rate      int           `json:"rate"`
	Duration  time.Duration `json:"durationNs"`
	Requests  int           `json:"requests"`
	Decisions Decisions     `json:"decisions"`
	// Answered503 counts 503 answers (retried with the same key).
	Answered503 int `json:"answered503"`
}

var emulatorURL = regexp.MustCompile(`"msg":"sqs emulator listening".*"url":"([^"]+)"`)

// NewSQSSplit is a fleet on the SQS backend whose emulator runs as a
// process of its own (`boxoffice sqs-emulator`), as AWS's service is apart
// from serve and work.
func NewSQSSplit(t T, more proctest.Env) *Fleet {
	t.Helper()
	emu := proctest.Start(t, "sqs-emulator", proctest.Env{}, "sqs-emulator")
	m := emulatorURL.FindStringSubmatch(emu.WaitLog(`"sqs emulator listening"`, 30*time.Second))
	require.NotNil(t, m, "emulator URL logged")
	ctx := context.Background()
	client, err := sqsqueue.NewClient(ctx, m[1], "us-east-1")
	require.NoError(t, err)
	mainURL, dlqURL, err := sqsqueue.EnsureQueues(ctx, client, "claims", 5, 30*time.Second)
	require.NoError(t, err)
	env := proctest.Env{"BOXOFFICE_QUEUE_BACKEND": "sqs", "BOXOFFICE_SQS_ENDPOINT": m[1], "BOXOFFICE_SQS_QUEUE_URL": mainURL, "BOXOFFICE_SQS_DLQ_URL": dlqURL}
	for k, v := range more {
		env[k] = v
	}
	return New(t, env)
}

// SQSAtRate runs a sale on the SQS backend split as in production — the
// emulator, one serve and two work processes — with no fault: rate new
// buyers a second, each reserving one number of one of three products of
// 5,000 with 30 s holds (so holds expire and the sweeper frees them while
// the load goes on), for d. It returns request → decision times.
func SQSAtRate(t T, rate int, d time.Duration) SQSRate {
	t.Helper()
	out := SQSRate{Rate: rate, Duration: d}
	f := NewSQSSplit(t, nil)
	f.Serve("serve")
	f.Work("work-a", nil)
	f.Work("work-b", nil)
	f.Tenant()
	var products []uuid.UUID
	for i := range 3 {
		created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
			"slug": fmt.Sprintf("rate-%d", i), "name": "Rate Night", "kind": "numbered", "capacity": 5000,
			"priceCents": 1000, "currency": "EUR", "holdSeconds": 30})
		products = append(products, uuid.MustParse(created["id"].(string)))
	}
	start := time.Now()
	seen := f.AtRate(products, rate, d)
	require.Zero(t, seen[http.StatusInternalServerError], "no 500s: %v", seen)
	out.Answered503 = seen[http.StatusServiceUnavailable]
	f.WaitDecided(2 * time.Minute)
	out.Decisions = f.DecisionsBetween(uuid.Nil, start, time.Now())
	out.Requests = out.Decisions.N
	f.RequireSound()
	return out
}

// AtRate sends rate reservations a second for d, open loop (a slow answer
// does not slow the arrivals), spread over products, each from a new buyer
// and retried with its key through 503s and lost connections. It returns
// the statuses seen.
func (f *Fleet) AtRate(products []uuid.UUID, rate int, d time.Duration) map[int]int {
	f.t.Helper()
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	var n atomic.Int64
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		<-tick.C
		i := n.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			product := products[int(i)%len(products)]
			tok, err := tenant.SignBuyerToken([]byte(f.Secret), f.TenantID, fmt.Sprintf("rate-%d", i), time.Hour)
			if !assert.NoError(f.t, err) {
				return
			}
			f.reserveOne(product, tok, func(code int) {
				mu.Lock()
				seen[code]++
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	return seen
}
