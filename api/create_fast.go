package api

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"boxoffice/internal/tenant"
)

// createPath is the reservation operation's path, as huma registers it.
const createPath = "/v1/products/{id}/reservations"

// createInput is what a reservation request carries.
type createInput struct {
	ProductPath
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"200" doc:"Required; unique per buyer"`
	AccessToken    string `header:"X-Access-Token" maxLength:"2000" doc:"Required when the product's waiting room is on"`
	Prefer         string `header:"Prefer" maxLength:"200" doc:"wait=N (RFC 7240): answer when the request is decided (201), or after N seconds (at most 20) with its status then (202)"`
	Body           ReservationBody
}

// fastCreate serves the plain case of POST /v1/products/{id}/reservations —
// the request an opening sends by the hundred thousand — ahead of huma's
// route for it. Huma's per-request work (reflection over the input and
// output, the body decoded twice, a context wrapper per middleware) was a
// sixth of a reservation's CPU in a burst (docs/benchmark-history.md). The
// operation stays huma's: its registered schema validates the body here as
// it does there, its parameters' limits bound the headers, the rate limits
// count into the same windows, and every request that is not the plain
// case — another credential, content type or answer format, a body or a
// header the schema refuses — goes on to huma's route, whose answers are
// the documented ones.
type fastCreate struct {
	registry  huma.Registry
	body      *huma.Schema
	maxBody   int
	maxKey    int
	maxToken  int
	maxPrefer int
	bodies    bodyMemo
}

// newFastCreate reads the operation's rules from the document huma built.
func newFastCreate(oapi *huma.OpenAPI) (*fastCreate, error) {
	item := oapi.Paths[createPath]
	if item == nil || item.Post == nil || item.Post.RequestBody == nil || item.Post.RequestBody.Content["application/json"] == nil {
		return nil, fmt.Errorf("api: %s is not registered with a JSON body", createPath)
	}
	op := item.Post
	f := &fastCreate{registry: oapi.Components.Schemas, body: op.RequestBody.Content["application/json"].Schema,
		maxBody: int(op.MaxBodyBytes)}
	for _, p := range op.Parameters {
		if p.In != "header" || p.Schema == nil || p.Schema.MaxLength == nil {
			continue
		}
		switch p.Name {
		case "Idempotency-Key":
			f.maxKey = *p.Schema.MaxLength
		case "X-Access-Token":
			f.maxToken = *p.Schema.MaxLength
		case "Prefer":
			f.maxPrefer = *p.Schema.MaxLength
		}
	}
	if f.maxBody <= 0 || f.maxKey <= 0 || f.maxToken <= 0 || f.maxPrefer <= 0 {
		return nil, fmt.Errorf("api: %s has no body or header limits to keep", createPath)
	}
	return f, nil
}

// createFast serves the request if it is the plain case (see fastCreate),
// and hands it on to huma's route otherwise.
func (s *Server) createFast(c *fiber.Ctx) error {
	f := s.fast
	if f == nil || !jsonOnly(c.Get(fiber.HeaderContentType), c.Get(fiber.HeaderAccept)) {
		return c.Next()
	}
	// Only the canonical form of the uuid: huma decides on the others.
	idParam := c.Params("id")
	id, err := uuid.Parse(idParam)
	key, access, prefer := c.Get("Idempotency-Key"), c.Get("X-Access-Token"), c.Get("Prefer")
	body := c.Body()
	// Byte lengths bound the rune counts the schema limits.
	if err != nil || len(idParam) != 36 || len(key) > f.maxKey || len(access) > f.maxToken || len(prefer) > f.maxPrefer ||
		len(body) == 0 || len(body) > f.maxBody {
		return c.Next()
	}
	token, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" || tenant.IsProviderToken(token) || strings.HasPrefix(token, tenant.APIKeyPrefix) || s.isAdminKey(token) {
		return c.Next()
	}
	in := &createInput{ProductPath: ProductPath{ID: id}, IdempotencyKey: key, AccessToken: access, Prefer: prefer}
	if in.Body, ok = f.bodies.get(body); !ok {
		if in.Body, ok = f.decode(body); !ok {
			return c.Next()
		}
		f.bodies.put(body, in.Body)
	}

	ctx, cancel := s.requestContext(c.UserContext(), c)
	defer cancel()
	// The token is checked before the limits, unlike on huma's route: a
	// request it refuses goes there, and counting it here too would count
	// it twice. It is not copied out of Fiber's buffer: what the check
	// returns is decoded into buffers of its own.
	buyer, err := tenant.VerifyBuyerToken(ctx, tokenKeys{s}, token)
	if err != nil {
		return c.Next()
	}
	client := clientOf(ctx)
	now := time.Now()
	who := principal{TenantID: buyer.TenantID, BuyerID: buyer.ID}
	if !s.limits.any.allow(anyKey(client), now) || !s.limits.ip.allow(ipKey(client), now) ||
		!s.limits.buyer.allow(buyerKey(who), now) {
		return writeProblem(fiberResponse{c}, tooMany())
	}
	noteCaller(ctx, who)
	out, err := s.createReservation(context.WithValue(ctx, principalKey{}, who), in)
	if err != nil {
		return writeProblem(fiberResponse{c}, err)
	}
	c.Set(fiber.HeaderLocation, out.Location)
	if out.PreferenceApplied != "" {
		c.Set("Preference-Applied", out.PreferenceApplied)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Status(out.Status)
	// As huma's JSON format writes it (a value, then a newline); a view
	// fits the buffer on the stack.
	var buf [1024]byte
	c.Response().AppendBody(append(out.Body.appendJSON(buf[:0]), '\n'))
	return nil
}

// decode checks body against the operation's schema and decodes it, as
// huma's route would; false for a body the schema refuses.
func (f *fastCreate) decode(body []byte) (ReservationBody, bool) {
	var parsed any
	if json.Unmarshal(body, &parsed) != nil {
		return ReservationBody{}, false
	}
	res := &huma.ValidateResult{}
	huma.Validate(f.registry, f.body, huma.NewPathBuffer(make([]byte, 0, 64), 0), huma.ModeWriteToServer, parsed, res)
	// The typed decode keeps encoding/json's rules (names matched without
	// regard to case, as huma's schema check matches them; the last of a
	// name given twice) in the JSON v2 implementation of them: a third
	// cheaper, and 2 allocations instead of 7.
	var out ReservationBody
	if len(res.Errors) > 0 || jsonv1.Unmarshal(body, &out) != nil {
		return ReservationBody{}, false
	}
	return out, true
}

// bodyMemo keeps the small bodies the schema accepted, decoded. An
// opening's requests repeat a few bodies thousands of times — the same
// quantity, one seat each of a few thousand — and checking and decoding
// one took 1.6 µs apart, more in a burst. What a body decodes to depends
// on its bytes alone (the schema is fixed when the server starts).
type bodyMemo struct {
	mu sync.RWMutex
	m  map[string]ReservationBody
}

const (
	maxMemoBody   = 96     // bytes: a quantity, a few seats
	maxMemoBodies = 20_000 // ~2 MB at most; emptied when full
)

// get returns the decoded body, its slices and pointers copied: the
// request path may keep or change what it was given.
func (b *bodyMemo) get(body []byte) (ReservationBody, bool) {
	if len(body) > maxMemoBody {
		return ReservationBody{}, false
	}
	b.mu.RLock()
	v, ok := b.m[string(body)]
	b.mu.RUnlock()
	if !ok {
		return ReservationBody{}, false
	}
	return detached(v), true
}

func (b *bodyMemo) put(body []byte, v ReservationBody) {
	if len(body) > maxMemoBody {
		return
	}
	v = detached(v)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxMemoBodies {
		b.m = make(map[string]ReservationBody, 1024)
	}
	b.m[string(body)] = v
}

// detached is v with a slice and pointer of its own (an empty list stays
// one: the handler tells it from none).
func detached(v ReservationBody) ReservationBody {
	v.Numbers = slices.Clone(v.Numbers)
	if v.Offer != nil {
		offer := *v.Offer
		v.Offer = &offer
	}
	return v
}

// jsonOnly says whether a request's body is JSON and its answer may be
// (huma also speaks CBOR, and negotiates).
func jsonOnly(contentType, accept string) bool {
	media, _, _ := strings.Cut(contentType, ";")
	if strings.TrimSpace(media) != fiber.MIMEApplicationJSON {
		return false
	}
	switch strings.TrimSpace(accept) {
	case "", "*/*", fiber.MIMEApplicationJSON:
		return true
	}
	return false
}
