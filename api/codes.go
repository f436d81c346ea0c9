package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/checkout"
	"boxoffice/internal/codes"
)

// codeMessages say to a shopper why a code does not apply.
var codeMessages = map[string]string{
	codes.Unknown:         "no such code",
	codes.NotYetValid:     "this code is not valid yet",
	codes.Expired:         "this code has expired",
	codes.NotForThisEvent: "this code is for another event",
	codes.UsedUp:          "this code has been used as often as it may",
	codes.UsedByYou:       "you have used this code as often as you may",
}

// maxCodesPerCall bounds the codes one call adds or generates.
const maxCodesPerCall = 10_000

// CodeListBody is a new list of discount codes.
type CodeListBody struct {
	Name           string     `json:"name" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$" patternDescription:"no control characters"`
	ProductID      *uuid.UUID `json:"productId,omitempty" doc:"The product its codes are for; absent: every product of the tenant"`
	PercentOff     *int       `json:"percentOff,omitempty" minimum:"1" maximum:"100" doc:"Percent off the tickets' prices; or amountOffCents"`
	AmountOffCents *int64     `json:"amountOffCents,omitempty" minimum:"1" doc:"Amount off an order's tickets (at most their prices); or percentOff"`
	UsesPerCode    int        `json:"usesPerCode,omitempty" minimum:"1" maximum:"1000000" doc:"Orders one code may be used for (default 1)"`
	PerBuyer       int        `json:"perBuyer,omitempty" minimum:"1" maximum:"100" doc:"Orders one buyer may use the list's codes for (default 1)"`
	ValidFrom      *time.Time `json:"validFrom,omitempty"`
	ValidUntil     *time.Time `json:"validUntil,omitempty"`
	CodesBody
}

// CodesBody are codes to add: given (uploaded), generated, or both.
type CodesBody struct {
	Codes    []string `json:"codes,omitempty" maxItems:"10000" doc:"Codes to add: 3 to 40 letters, digits or dashes (case does not matter)"`
	Generate int      `json:"generate,omitempty" minimum:"0" maximum:"10000" doc:"How many random codes (XXXX-XXXX) to add"`
}

func (b CodesBody) all() ([]string, error) {
	if len(b.Codes)+b.Generate == 0 {
		return nil, problem(http.StatusUnprocessableEntity, "NO_CODES", "give codes, or how many to generate")
	}
	if len(b.Codes)+b.Generate > maxCodesPerCall {
		return nil, problem(http.StatusUnprocessableEntity, "TOO_MANY_CODES", fmt.Sprintf("at most %d codes a call", maxCodesPerCall))
	}
	return append(append([]string{}, b.Codes...), codes.Generate(b.Generate)...), nil
}

// CodeList is a list with its usage.
type CodeList struct {
	*codes.List
}

// createCodeList serves POST /v1/code-lists.
func (s *Server) createCodeList(ctx context.Context, in *struct{ Body CodeListBody }) (*struct {
	Status int
	Body   CodeList
}, error) {
	b, tenantID := in.Body, caller(ctx).TenantID
	if (b.PercentOff == nil) == (b.AmountOffCents == nil) {
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_DISCOUNT", "give percentOff or amountOffCents, one of them")
	}
	if b.ValidFrom != nil && b.ValidUntil != nil && !b.ValidUntil.After(*b.ValidFrom) {
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_DATES", "validUntil must come after validFrom")
	}
	if b.ProductID != nil {
		if _, err := s.Products.Get(ctx, tenantID, *b.ProductID); err != nil {
			return nil, s.toProblem(err)
		}
	}
	all, err := b.all()
	if err != nil {
		return nil, err
	}
	t := codes.Terms{Name: b.Name, ProductID: b.ProductID, PercentOff: b.PercentOff, AmountOffCents: b.AmountOffCents,
		UsesPerCode: max(b.UsesPerCode, 1), PerBuyer: max(b.PerBuyer, 1), ValidFrom: b.ValidFrom, ValidUntil: b.ValidUntil}
	var id uuid.UUID
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		id, err = codes.CreateList(ctx, tx, tenantID, t, all)
		return err
	})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return s.codeListAnswer(ctx, tenantID, id, http.StatusCreated)
}

// addCodes serves POST /v1/code-lists/{id}/codes.
func (s *Server) addCodes(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id"`
	Body CodesBody
}) (*struct {
	Status int
	Body   CodeList
}, error) {
	tenantID := caller(ctx).TenantID
	if _, err := codes.Get(ctx, s.Pool, tenantID, in.ID); err != nil {
		return nil, s.toProblem(err)
	}
	all, err := in.Body.all()
	if err != nil {
		return nil, err
	}
	if err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error { return codes.AddCodes(ctx, tx, tenantID, in.ID, all) }); err != nil {
		return nil, s.toProblem(err)
	}
	return s.codeListAnswer(ctx, tenantID, in.ID, http.StatusOK)
}

func (s *Server) codeListAnswer(ctx context.Context, tenantID, id uuid.UUID, status int) (*struct {
	Status int
	Body   CodeList
}, error) {
	l, err := codes.Get(ctx, s.Pool, tenantID, id)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct {
		Status int
		Body   CodeList
	}{status, CodeList{l}}, nil
}

// CodeLists are the tenant's lists.
type CodeLists struct {
	Lists []CodeList `json:"lists"`
}

// listCodeLists serves GET /v1/code-lists.
func (s *Server) listCodeLists(ctx context.Context, _ *struct{}) (*struct{ Body CodeLists }, error) {
	ls, err := codes.Lists(ctx, s.Pool, caller(ctx).TenantID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := CodeLists{Lists: make([]CodeList, len(ls))}
	for i, l := range ls {
		out.Lists[i] = CodeList{l}
	}
	return &struct{ Body CodeLists }{out}, nil
}

// codesCSV serves GET /v1/code-lists/{id}/codes.csv: each code with its
// uses, to hand out (mail merge) or to audit.
func (s *Server) codesCSV(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id"`
}) (*download, error) {
	l, err := codes.Get(ctx, s.Pool, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	usage, err := codes.CodesOf(ctx, s.Pool, l.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"code", "used", "reserved"}) // a bytes.Buffer takes every write
	for _, u := range usage {
		_ = w.Write([]string{u.Code, strconv.Itoa(u.Used), strconv.Itoa(u.Reserved)})
	}
	w.Flush()
	return attachment("text/csv; charset=utf-8", "codes-"+l.ID.String()+".csv", b.Bytes()), nil
}

// PriceBody asks what a hold costs, with a code.
type PriceBody struct {
	DiscountCode string `json:"discountCode,omitempty" maxLength:"40" doc:"A discount code to try"`
}

// priceHold serves POST /v1/holds/{id}/price.
func (s *Server) priceHold(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id"`
	Body PriceBody
}) (*struct{ Body *checkout.Priced }, error) {
	who := caller(ctx)
	p, err := s.Checkout.Price(ctx, who.TenantID, who.BuyerID, in.ID, in.Body.DiscountCode)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *checkout.Priced }{p}, nil
}
