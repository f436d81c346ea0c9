package api

import (
	"context"
	"fmt"
	"net/http"

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
	huma.Register(s.api, op, h)
}
