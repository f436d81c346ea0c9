package api

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"boxoffice/internal/codes"
	"boxoffice/internal/db"
	"boxoffice/internal/product"
	"boxoffice/internal/rehearsal"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/internal/waitingroom"
	"boxoffice/internal/webhook"
)

// Problem is an RFC 9457 problem document with a stable machine code.
type Problem struct {
	Type   string              `json:"type,omitempty" doc:"A URI for the problem type"`
	Title  string              `json:"title" doc:"Short summary of the problem type"`
	Status int                 `json:"status" doc:"HTTP status code"`
	Code   string              `json:"code" doc:"Stable machine-readable code, e.g. NUMBER_OUT_OF_RANGE"`
	Detail string              `json:"detail,omitempty" doc:"What went wrong this time"`
	Errors []*huma.ErrorDetail `json:"errors,omitempty" doc:"Individual validation errors"`
	// Headers go with the response (Retry-After).
	Headers http.Header `json:"-"`
}

// GetHeaders lets huma send the problem's headers.
func (p *Problem) GetHeaders() http.Header { return p.Headers }

func (p *Problem) Error() string  { return p.Code + ": " + p.Detail }
func (p *Problem) GetStatus() int { return p.Status }

// ContentType makes JSON problems application/problem+json.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// problem makes a problem document. Its type is a URI reference to the
// API reference (served by the binary at /docs) naming the code; a 401
// says how to authenticate (RFC 9110: WWW-Authenticate).
func problem(status int, code, detail string) *Problem {
	p := &Problem{Type: problemType + code, Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
	if status == http.StatusUnauthorized {
		p.Headers = http.Header{"WWW-Authenticate": {`Bearer realm="boxoffice"`}}
	}
	return p
}

// problemType prefixes a problem's code to make its type URI.
const problemType = "/docs#problem-"

// codeForStatus names the problems huma raises itself (validation, body
// size, content type) and Fiber's routing errors.
func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "MALFORMED_REQUEST"
	case http.StatusUnauthorized:
		return "UNAUTHORIZED"
	case http.StatusForbidden:
		return "FORBIDDEN"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "METHOD_NOT_ALLOWED"
	case http.StatusNotAcceptable:
		return "NOT_ACCEPTABLE"
	case http.StatusRequestEntityTooLarge:
		return "BODY_TOO_LARGE"
	case http.StatusUnsupportedMediaType:
		return "UNSUPPORTED_MEDIA_TYPE"
	case http.StatusUnprocessableEntity:
		return "VALIDATION_FAILED"
	case http.StatusTooManyRequests:
		return "RATE_LIMITED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	default:
		if status >= 500 {
			return "INTERNAL"
		}
		return "BAD_REQUEST"
	}
}

var installErrorsOnce sync.Once

// installProblemErrors makes huma report its own errors as Problems. huma
// offers this hook only as a package variable, so it is set once per process.
func installProblemErrors() {
	installErrorsOnce.Do(func() {
		huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
			p := problem(status, codeForStatus(status), msg)
			for _, err := range errs {
				if err == nil {
					continue
				}
				if len(p.Errors) == maxErrorDetails {
					break // enough to fix the input by
				}
				var d huma.ErrorDetailer
				if errors.As(err, &d) {
					p.Errors = append(p.Errors, publicDetail(d.ErrorDetail()))
				} else {
					p.Errors = append(p.Errors, &huma.ErrorDetail{Message: publicMessage(err.Error())})
				}
			}
			p.Detail = publicMessage(p.Detail)
			return p
		}
	})
}

// maxErrorDetails bounds the validation failures one problem lists.
const maxErrorDetails = 20

// publicDetail is a validation failure as a caller should see it: the
// offending value only when it is a short scalar (huma hands over the
// whole enclosing object for an unexpected property, megabytes of the
// caller's own body), and no Go names in the message.
func publicDetail(d *huma.ErrorDetail) *huma.ErrorDetail {
	out := &huma.ErrorDetail{Message: publicMessage(d.Message), Location: d.Location}
	switch v := d.Value.(type) {
	case string:
		if len(v) <= 64 {
			out.Value = v
		}
	case bool, float64, int, int64, json.Number:
		out.Value = v
	}
	return out
}

// goNames are the parts of Go's decoding errors that name the server's
// types: "Go struct field ReservationBody.quantity of type int".
var goNames = regexp.MustCompile(`Go (?:struct field [\w]+\.|value of type )|(?: of)? type [\w.\[\]*]+`)

// publicMessage strips Go type names from a decoding error's message.
func publicMessage(msg string) string {
	msg = goNames.ReplaceAllStringFunc(msg, func(m string) string {
		if strings.HasPrefix(m, "Go struct field") {
			return "field "
		}
		return ""
	})
	return strings.TrimPrefix(msg, "json: ")
}

// toProblem maps a domain error onto a problem; anything unknown is logged
// and becomes a 500 without details.
func (s *Server) toProblem(err error) error {
	var p *Problem
	var input *reservation.InputError
	var quota *product.QuotaError
	var badCode *codes.InvalidError
	if cp := checkoutProblem(err); cp != nil {
		return cp
	}
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &quota):
		return problem(http.StatusForbidden, "QUOTA_EXCEEDED", quota.Error())
	case errors.As(err, &input):
		return problem(http.StatusUnprocessableEntity, input.Code, input.Message)
	case errors.Is(err, db.ErrNotFound):
		return problem(http.StatusNotFound, "NOT_FOUND", "no such resource")
	case errors.Is(err, reservation.ErrIdempotencyConflict):
		return problem(http.StatusConflict, "IDEMPOTENCY_KEY_REUSED", err.Error())
	case errors.Is(err, reservation.ErrHoldConverted):
		return problem(http.StatusConflict, "HOLD_CONVERTED", err.Error())
	case errors.Is(err, tenant.ErrSlugTaken), errors.Is(err, product.ErrSlugTaken), errors.Is(err, product.ErrEventSlugTaken):
		return problem(http.StatusConflict, "SLUG_TAKEN", err.Error())
	case errors.Is(err, product.ErrLayoutLocked):
		return problem(http.StatusConflict, "LAYOUT_LOCKED", err.Error())
	case errors.Is(err, product.ErrSeated):
		return problem(http.StatusConflict, "NOT_SEATED", err.Error())
	case errors.Is(err, product.ErrLayoutCapacity), errors.Is(err, product.ErrLayoutKind), errors.Is(err, product.ErrLayout):
		return problem(http.StatusUnprocessableEntity, "INVALID_LAYOUT", err.Error())
	case errors.Is(err, product.ErrPublication):
		return problem(http.StatusConflict, "INVALID_PUBLICATION_CHANGE", err.Error())
	case errors.Is(err, product.ErrPriceLocked):
		return problem(http.StatusConflict, "PRICE_LOCKED", err.Error())
	case errors.Is(err, product.ErrTimeZone):
		return problem(http.StatusUnprocessableEntity, "INVALID_TIME_ZONE", err.Error())
	case errors.Is(err, product.ErrDates):
		return problem(http.StatusUnprocessableEntity, "INVALID_DATES", err.Error())
	case errors.Is(err, product.ErrOnSaleInPast):
		return problem(http.StatusUnprocessableEntity, "ON_SALE_IN_PAST", err.Error())
	case errors.Is(err, webhook.ErrInvalidURL):
		return problem(http.StatusUnprocessableEntity, "INVALID_WEBHOOK_URL", err.Error())
	case errors.Is(err, webhook.ErrUnknownType):
		return problem(http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE", err.Error())
	case errors.Is(err, webhook.ErrInvalidEmail):
		return problem(http.StatusUnprocessableEntity, "INVALID_EMAIL", err.Error())
	case errors.Is(err, webhook.ErrTooManyEndpoints):
		return problem(http.StatusConflict, "TOO_MANY_ENDPOINTS", err.Error())
	case errors.Is(err, webhook.ErrDisabled):
		return problem(http.StatusConflict, "ENDPOINT_DISABLED", err.Error())
	case errors.Is(err, product.ErrNoWaitingRoom):
		return problem(http.StatusConflict, "NO_WAITING_ROOM", err.Error())
	case errors.Is(err, product.ErrDateCancelled):
		return problem(http.StatusConflict, "EVENT_CANCELLED", err.Error())
	case errors.Is(err, product.ErrAlreadyOnSale):
		return problem(http.StatusConflict, "ALREADY_ON_SALE", err.Error())
	case errors.Is(err, rehearsal.ErrBusy):
		return problem(http.StatusConflict, "REHEARSAL_RUNNING", err.Error())
	case errors.Is(err, product.ErrRehearsalShadow):
		return problem(http.StatusConflict, "REHEARSAL_SHADOW", err.Error())
	case errors.Is(err, waitingroom.ErrAlreadyDrawn):
		return problem(http.StatusConflict, "ALREADY_DRAWN", err.Error())
	case errors.Is(err, tenant.ErrDomainTaken):
		return problem(http.StatusConflict, "DOMAIN_TAKEN", err.Error())
	case errors.Is(err, tenant.ErrInvalidStore):
		return problem(http.StatusUnprocessableEntity, "INVALID_STORE", err.Error())
	case errors.As(err, &badCode):
		return problem(http.StatusUnprocessableEntity, "CODE_"+badCode.Reason, codeMessages[badCode.Reason])
	case errors.Is(err, codes.ErrCodeTaken):
		return problem(http.StatusConflict, "CODE_TAKEN", err.Error())
	case errors.Is(err, codes.ErrBadCode):
		return problem(http.StatusUnprocessableEntity, "INVALID_CODE", err.Error())
	}
	if p := databaseProblem(s.Logger, err); p != nil {
		return p
	}
	s.Logger.Error("request failed", "error", err)
	return problem(http.StatusInternalServerError, "INTERNAL", "internal error")
}

// databaseProblem is the answer when the database could not do the work
// for now, each with its own code and Retry-After, or nil when err is
// something else. The request may still have been recorded (a commit whose
// acknowledgement was lost): retrying with the same Idempotency-Key tells.
//
//   - WRITER_CONFLICT: two hosts accept writes, or the one reached is an old
//     primary (db.ErrFenced): purchases pause until an operator fences it.
//   - PRODUCT_BUSY: the database is up but the work waited past its lock
//     or statement timeout (another transaction held the product's rows).
//   - DATABASE_UNAVAILABLE: the database cannot be reached.
func databaseProblem(logger *slog.Logger, err error) *Problem {
	var p *Problem
	switch {
	case errors.Is(err, db.ErrFenced):
		logger.Error("refused: database writer in doubt", "error", err)
		p = problem(http.StatusServiceUnavailable, "WRITER_CONFLICT",
			"purchases are paused while the service cannot tell which database is the writer; retry later with the same Idempotency-Key")
		p.Headers = http.Header{"Retry-After": {"5"}}
	case db.IsBusy(err):
		logger.Warn("database busy: a lock wait or statement timed out", "error", err)
		p = problem(http.StatusServiceUnavailable, "PRODUCT_BUSY",
			"the product is busy right now; retry shortly with the same Idempotency-Key")
		p.Headers = http.Header{"Retry-After": {"1"}}
	case db.IsBadText(err):
		// The request's own checks should have refused it first; this
		// keeps what slipped through a client error, not a 500.
		logger.Warn("text the database cannot store reached it", "error", err)
		p = problem(http.StatusUnprocessableEntity, "INVALID_TEXT", "text may not contain NUL characters or invalid UTF-8")
	case db.IsUnavailable(err):
		logger.Warn("database unavailable", "error", err)
		p = problem(http.StatusServiceUnavailable, "DATABASE_UNAVAILABLE",
			"the service cannot reach its database right now; retry shortly with the same Idempotency-Key")
		p.Headers = http.Header{"Retry-After": {"2"}}
	}
	return p
}

// fiberErrorHandler answers errors raised outside huma (unknown routes,
// Fiber's own body limit, recovered panics) as problems too.
func fiberErrorHandler(logger *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		status := http.StatusInternalServerError
		detail := "internal error"
		var fe *fiber.Error
		if errors.As(err, &fe) {
			status, detail = fe.Code, fe.Message
		} else if p := databaseProblem(logger.With("path", c.Path()), err); p != nil {
			c.Set(fiber.HeaderRetryAfter, p.Headers.Get("Retry-After"))
			return c.Status(p.Status).JSON(p, "application/problem+json")
		} else {
			logger.Error("unhandled error", "path", c.Path(), "error", err)
		}
		c.Set(fiber.HeaderContentType, "application/problem+json")
		return c.Status(status).JSON(problem(status, codeForStatus(status), detail), "application/problem+json")
	}
}

// secretOutput is a response that carries a secret shown once (a new key,
// a tenant's first credentials, a rotated secret, a buyer token): no cache
// on the way may keep a copy.
type secretOutput[T any] struct {
	CacheControl string `header:"Cache-Control"`
	Body         T
}

func shownOnce[T any](body T) *secretOutput[T] {
	return &secretOutput[T]{CacheControl: "no-store", Body: body}
}

// responseWriter is what a problem is written to: huma's context, or
// Fiber's on the fast path.
type responseWriter interface {
	AppendHeader(name, value string)
	SetHeader(name, value string)
	SetStatus(code int)
	BodyWriter() io.Writer
}

// fiberResponse writes a response through Fiber's context.
type fiberResponse struct{ c *fiber.Ctx }

func (r fiberResponse) AppendHeader(name, value string) { r.c.Append(name, value) }
func (r fiberResponse) SetHeader(name, value string)    { r.c.Set(name, value) }
func (r fiberResponse) SetStatus(code int)              { r.c.Status(code) }
func (r fiberResponse) BodyWriter() io.Writer           { return r.c }

// writeProblem answers with err's problem (a 500 when err is not one).
func writeProblem(w responseWriter, err error) error {
	var p *Problem
	if !errors.As(err, &p) {
		p = problem(http.StatusInternalServerError, "INTERNAL", "internal error")
	}
	for name, values := range p.Headers {
		for _, v := range values {
			w.AppendHeader(name, v)
		}
	}
	w.SetHeader("Content-Type", "application/problem+json")
	w.SetStatus(p.Status)
	return json.NewEncoder(w.BodyWriter()).Encode(p)
}

// fiberProblem answers a plain Fiber route with a problem.
func fiberProblem(c *fiber.Ctx, err error) error { return writeProblem(fiberResponse{c}, err) }
