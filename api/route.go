package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
)

// Methods, short for the route table.
const (
	get   = http.MethodGet
	post  = http.MethodPost
	put   = http.MethodPut
	patch = http.MethodPatch
	del   = http.MethodDelete
)

// option sets one more field of an operation in the route table.
type option func(*huma.Operation)

// by names who may call the operation (its security schemes).
func by(schemes ...string) option {
	return func(op *huma.Operation) { op.Security = security(schemes...) }
}

// status is the operation's answer when it succeeds, when not 200.
func status(code int) option { return func(op *huma.Operation) { op.DefaultStatus = code } }

// body bounds the request body.
func body(max int64) option { return func(op *huma.Operation) { op.MaxBodyBytes = max } }

// errs are the problem statuses the API document lists for the operation.
func errs(codes ...int) option { return func(op *huma.Operation) { op.Errors = codes } }

// replayed declares the 200 an operation answers when the same request
// comes again (its idempotency key, a join already made): the body is the
// one its first answer had.
func replayed() option { return meta("replay") }

// decides declares the 201 of a create answered with the request's
// decision: waited for (Prefer: wait=N), or known as it was recorded.
func decides() option { return meta("decides") }

// conditional declares the 304 an operation answers to If-None-Match
// naming the current ETag.
func conditional() option { return meta("conditional") }

func meta(key string) option {
	return func(op *huma.Operation) {
		if op.Metadata == nil {
			op.Metadata = map[string]any{}
		}
		op.Metadata[key] = true
	}
}

// public is the security of an operation anyone may call: one empty
// requirement (OpenAPI's way to say no credentials are needed).
var public = []map[string][]string{{}}

// tags describe the groups of the route table's operations.
var tags = []*huma.Tag{
	{Name: "Tenants", Description: "White-label tenants, their API keys, buyer-token secrets and identity providers"},
	{Name: "Console", Description: "The console's sign-in sessions"},
	{Name: "Events", Description: "Shows with their venue and dates"},
	{Name: "Products", Description: "Dates on sale: numbered inventory, seat maps, availability"},
	{Name: "Store", Description: "A tenant's store: its public catalog, settings, pictures and the shoppers' login"},
	{Name: "Reservations", Description: "Reservation requests, polled until HELD or REJECTED, and holds"},
	{Name: "Codes", Description: "Discount and presale codes"},
	{Name: "Waiting list", Description: "Sold-out products' waiting lists and their offers"},
	{Name: "Waiting room", Description: "The virtual waiting room: joins, polls, the draw, admission"},
	{Name: "Checkout", Description: "Orders, payments, tickets and their documents"},
	{Name: "Refunds", Description: "Refunds, a buyer's cancellation, cancelling a date"},
	{Name: "Tickets", Description: "A buyer's tickets and their transfers"},
	{Name: "Webhooks", Description: "Endpoints that receive the tenant's events, signed the Standard Webhooks way, and their delivery log"},
	{Name: "Operations", Description: "Queues, dead letters, live sales, reports and the audit log"},
	{Name: "Rehearsals", Description: "Rehearsing an opening against a shadow product"},
}

// everywhere are the statuses any operation may answer: a request with
// text no one can store (a NUL, invalid UTF-8: 400 MALFORMED_REQUEST), the
// rate limits (429) and an unavailable database or a shed load (503), the
// last two with Retry-After.
var everywhere = []int{http.StatusBadRequest, http.StatusTooManyRequests, http.StatusServiceUnavailable}

// completeResponses finishes each operation's responses once huma has
// derived them: Retry-After on 429 and 503, WWW-Authenticate on 401, the
// 200 of a replay and the 304 of a conditional GET where the route table
// names them. Idempotency-Key is declared required: the handler checks it
// itself, to answer its own 400 IDEMPOTENCY_KEY_REQUIRED.
func completeResponses(_ *huma.OpenAPI, op *huma.Operation) {
	if op.Security == nil {
		op.Security = public
	}
	declareHeader(op.Responses["401"], "WWW-Authenticate",
		&huma.Param{Description: "The scheme to authenticate with", Schema: &huma.Schema{Type: "string"}})
	for _, p := range op.Parameters {
		if p.In == "header" && p.Name == "Idempotency-Key" {
			p.Required = true
		}
	}
	for _, code := range []string{"429", "503"} {
		declareHeader(op.Responses[code], "Retry-After", &huma.Param{Description: "Seconds to wait before trying again",
			Schema: &huma.Schema{Type: "integer", Minimum: new(float64)}})
	}

	if op.Metadata["replay"] == true {
		first := op.Responses[strconv.Itoa(op.DefaultStatus)]
		again := *first
		again.Description = "The same request again: the current state, as its first answer gave it"
		op.Responses["200"] = &again
	}
	if op.Metadata["decides"] == true {
		first := op.Responses[strconv.Itoa(op.DefaultStatus)]
		decided := *first
		decided.Description = "Created and decided: HELD or REJECTED within the wait asked with Prefer: wait=N, or " +
			"REJECTED at once, whatever the wait, when a number asked is already sold or held (SEAT_TAKEN) or fewer " +
			"are left than asked (SOLD_OUT, NOT_ENOUGH_LEFT)"
		op.Responses["201"] = &decided
	}
	if op.Metadata["conditional"] == true {
		op.Responses["304"] = &huma.Response{Description: "Not modified: the ETag sent in If-None-Match is current"}
	}
}

// declareHeader adds a header to a response, when the operation has it.
func declareHeader(r *huma.Response, name string, p *huma.Param) {
	if r == nil {
		return
	}
	if r.Headers == nil {
		r.Headers = map[string]*huma.Param{}
	}
	r.Headers[name] = p
}

// responses replaces the responses huma would derive from the handler.
func responses(r map[string]*huma.Response) option {
	return func(op *huma.Operation) { op.Responses = r }
}

// svgResponse is a 200 answered with an SVG image.
func svgResponse(description string) map[string]*huma.Response {
	return map[string]*huma.Response{"200": {Description: description,
		Content: map[string]*huma.MediaType{"image/svg+xml": {}}}}
}

// csvResponse declares a CSV download.
func csvResponse(description string) map[string]*huma.Response {
	return textResponse("text/csv", description)
}

// textResponse declares a download of a text type (CSV, iCalendar).
func textResponse(mediaType, description string) map[string]*huma.Response {
	return map[string]*huma.Response{"200": {Description: description,
		Content: map[string]*huma.MediaType{mediaType: {Schema: &huma.Schema{Type: "string"}}}}}
}

// route registers one operation of the route table, its prose taken from
// operations by id.
func route[I, O any](s *Server, tag, method, path, id string, h func(context.Context, *I) (*O, error), opts ...option) {
	doc, ok := operations[id]
	if !ok {
		panic(fmt.Sprintf("api: operation %s has no summary in operations.go", id)) // caught by every test that builds the API
	}
	op := huma.Operation{OperationID: id, Method: method, Path: path, Summary: doc.summary, Description: doc.description,
		Tags: []string{tag}}
	for _, o := range opts {
		o(&op)
	}
	for _, code := range everywhere {
		if !slices.Contains(op.Errors, code) {
			op.Errors = append(op.Errors, code)
		}
	}
	huma.Register(s.api, op, h)
}
