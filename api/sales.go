package api

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"boxoffice/internal/inventory"
	"boxoffice/internal/ops"
	"boxoffice/internal/product"
)

// Sale is one product in the console's list of sales: what the live view
// says of the product, with its sale status.
type Sale struct {
	ops.SaleProduct
	SaleStatus  string `json:"saleStatus" enum:"UPCOMING,ON_SALE,SOLD_OUT,CLOSED,DRAFT"`
	WaitingRoom bool   `json:"waitingRoom"`
}

// listSales serves GET /v1/ops/sales.
func (s *Server) listSales(ctx context.Context, _ *struct{}) (*struct{ Body []Sale }, error) {
	var list []*product.Product
	var err error
	if sc := scope(ctx); sc.TenantID == uuid.Nil {
		list, err = s.Products.ListAll(ctx, 200)
	} else {
		list, err = s.Products.List(ctx, sc.TenantID, 200)
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	ids := make([]uuid.UUID, len(list))
	for i, p := range list {
		ids[i] = p.ID
	}
	counts, err := inventory.CountsOf(ctx, s.Pool, ids)
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := make([]Sale, len(list))
	now := time.Now()
	for i, p := range list {
		c := counts[p.ID]
		out[i] = Sale{SaleProduct: ops.SaleProductOf(p, c), WaitingRoom: p.WaitingRoom != nil && p.WaitingRoom.Enabled}
		out[i].SaleStatus = saleStatus(p, c.Available, now)
		if p.Publication == "DRAFT" {
			out[i].SaleStatus = "DRAFT"
		}
	}
	return &struct{ Body []Sale }{out}, nil
}

// getSale serves GET /v1/ops/sales/{id}.
func (s *Server) getSale(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct {
	CacheControl string `header:"Cache-Control"`
	Body         *ops.SaleView
}, error) {
	v, err := s.sales.View(ctx, scope(ctx), in.ID)
	if err != nil {
		return nil, s.salesProblem(err)
	}
	return &struct {
		CacheControl string `header:"Cache-Control"`
		Body         *ops.SaleView
	}{"no-store", v}, nil
}

func (s *Server) salesProblem(err error) error {
	if errors.Is(err, ops.ErrNotVisible) {
		return problem(http.StatusNotFound, "NOT_FOUND", "no such product")
	}
	return s.toProblem(err)
}

// saleStream serves GET /v1/ops/sales/{id}/stream: the live view once a
// second as server-sent events (event: sale). A plain Fiber route, so it
// authenticates itself: a bearer key or the console's session.
func (s *Server) saleStream(c *fiber.Ctx) error {
	who, stillAllowed, err := s.streamCaller(c)
	if err != nil {
		return fiberProblem(c, s.toProblem(err))
	}
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return fiberProblem(c, problem(http.StatusNotFound, "NOT_FOUND", "no such product"))
	}
	sc := ops.Scope{TenantID: who.TenantID}
	ctx, cancel := context.WithTimeout(c.UserContext(), requestTimeout)
	first, err := s.sales.View(ctx, sc, id)
	cancel()
	if err != nil {
		return fiberProblem(c, s.salesProblem(err))
	}
	client := strings.Clone(clientNetwork(clientIP(c, s.RateLimits.TrustedProxies)))
	if !s.streams.acquire(client) {
		return fiberProblem(c, tooManyStreams())
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	stopping := s.stopping
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.streams.release(client)
		send := func(v *ops.SaleView) bool {
			b, err := json.Marshal(v)
			if err != nil {
				return false
			}
			_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := w.WriteString("event: sale\ndata: " + string(b) + "\n\n"); err != nil {
				return false
			}
			return w.Flush() == nil
		}
		if !send(first) {
			return
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				// A credential no longer in force (a revoked key, a session
				// signed out or idle, a changed admin key) ends the stream.
				if err := stillAllowed(ctx); err != nil {
					cancel()
					return
				}
				v, err := s.sales.View(ctx, sc, id)
				cancel()
				if err != nil {
					s.Logger.Warn("live sale view", "product", id, "error", err)
					continue
				}
				if !send(v) {
					return
				}
			case <-stopping:
				return
			}
		}
	})
	return nil
}

// streamCaller authenticates a plain Fiber route that operators and admins
// read: a bearer (admin key or API key) or the console's session cookie.
// stillAllowed checks the same credential again, for as long as a stream
// lives; a revoked key fails it once the key cache forgets the key.
func (s *Server) streamCaller(c *fiber.Ctx) (who principal, stillAllowed func(context.Context) error, err error) {
	allowed := func(scheme string) bool { return scheme == schemeAdmin || scheme == schemeOperator }
	token, _ := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	token = strings.Clone(strings.TrimSpace(token))
	if token == "" {
		who, _, err = s.fromSession(c, allowed)
		cookie := strings.Clone(c.Cookies(sessionCookie))
		return who, func(ctx context.Context) error {
			_, err := s.consoleSession(ctx, cookie)
			return err
		}, err
	}
	who, err = s.bearer(c.UserContext(), token, allowed)
	return who, func(ctx context.Context) error {
		_, err := s.bearer(ctx, token, allowed)
		return err
	}, err
}

func saleStreamOperation() *huma.Operation {
	return &huma.Operation{
		OperationID: "stream-sale",
		Method:      http.MethodGet,
		Path:        "/v1/ops/sales/{id}/stream",
		Summary:     "The live sale view once a second, as server-sent events",
		Description: "`event: sale` carries what GET /v1/ops/sales/{id} answers, every second, computed from the database " +
			"(every API process shows the same figures). Takes the admin key, an API key, or the console's session cookie.",
		Tags:     []string{"Operations"},
		Security: security(schemeAdmin, schemeOperator),
		Parameters: []*huma.Param{
			{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: "string", Format: "uuid"}},
		},
		Responses: map[string]*huma.Response{
			"200": {Description: "The event stream", Content: map[string]*huma.MediaType{"text/event-stream": {}}},
			"401": {Description: "No or bad credentials"},
			"404": {Description: "No such product, or another tenant's"},
		},
	}
}

// salesReport serves GET /v1/products/{id}/report.
func (s *Server) salesReport(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body *ops.SalesReport }, error) {
	r, err := s.sales.Report(ctx, scope(ctx), in.ID)
	if err != nil {
		return nil, s.salesProblem(err)
	}
	return &struct{ Body *ops.SalesReport }{r}, nil
}

// reportColumns are the CSV export's columns, in order.
var reportColumns = []string{"minute", "joined", "admitted", "reserved", "held", "numbers_held", "paid",
	"conflicts", "rejected", "expired", "revenue_cents", "refunds", "refunded_cents"}

// salesReportCSV serves GET /v1/products/{id}/report.csv.
func (s *Server) salesReportCSV(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*download, error) {
	r, err := s.sales.Report(ctx, scope(ctx), in.ID)
	if err != nil {
		return nil, s.salesProblem(err)
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(reportColumns)
	row := func(at string, st ops.ReportStep) {
		n := []int64{st.Joined, st.Admitted, st.Reserved, st.Held, st.Numbers, st.Paid, st.Conflicts, st.Rejected,
			st.Expired, st.RevenueCents, st.Refunds, st.RefundedCents}
		rec := slices.Grow([]string{at}, len(n))
		for _, v := range n {
			rec = append(rec, strconv.FormatInt(v, 10))
		}
		_ = w.Write(rec)
	}
	for _, st := range r.Steps {
		row(st.At.Format(time.RFC3339), st)
	}
	row("total", r.Totals)
	w.Flush()
	return attachment("text/csv; charset=utf-8", "sales-"+in.ID.String()+".csv", []byte(b.String())), nil
}
