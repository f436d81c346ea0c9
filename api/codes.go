package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/checkout"
	"boxoffice/internal/codes"
	"boxoffice/internal/product"
	"boxoffice/internal/waitingroom"
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

// CodeListBody is a new list of codes: discount codes, or presale codes.
type CodeListBody struct {
	Kind           string     `json:"kind,omitempty" enum:"discount,presale" doc:"discount (the default): money off; presale: the window validFrom–validUntil before productId's general sale, open to the codes' holders"`
	Name           string     `json:"name" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
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

// codeListOutput answers with a list: 201 when made, 200 when changed.
type codeListOutput struct {
	Status int
	Body   CodeList
}

// createCodeList serves POST /v1/code-lists.
func (s *Server) createCodeList(ctx context.Context, in *struct{ Body CodeListBody }) (*codeListOutput, error) {
	b, tenantID := in.Body, caller(ctx).TenantID
	presale := b.Kind == "presale"
	switch {
	case presale && (b.ProductID == nil || b.ValidFrom == nil || b.ValidUntil == nil):
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_PRESALE", "a presale needs productId, validFrom and validUntil")
	case presale && (b.PercentOff != nil || b.AmountOffCents != nil):
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_PRESALE", "a presale code gives early access, not a discount")
	case !presale && (b.PercentOff == nil) == (b.AmountOffCents == nil):
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_DISCOUNT", "give percentOff or amountOffCents, one of them")
	case b.ValidFrom != nil && b.ValidUntil != nil && !b.ValidUntil.After(*b.ValidFrom):
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_DATES", "validUntil must come after validFrom")
	}
	room := false
	if b.ProductID != nil {
		p, err := s.Products.Get(ctx, tenantID, *b.ProductID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		if presale && b.ValidUntil.After(p.OnSaleAt) {
			return nil, problem(http.StatusUnprocessableEntity, "PRESALE_AFTER_OPENING",
				"a presale ends by the general sale's opening, "+p.OnSaleAt.UTC().Format(time.RFC3339))
		}
		room = presale && p.WaitingRoom != nil && p.WaitingRoom.Enabled
	}
	all, err := b.all()
	if err != nil {
		return nil, err
	}
	kind := codes.KindDiscount
	if presale {
		kind = codes.KindPresale
	}
	t := codes.Terms{Kind: kind, Name: b.Name, ProductID: b.ProductID, PercentOff: b.PercentOff, AmountOffCents: b.AmountOffCents,
		UsesPerCode: max(b.UsesPerCode, 1), PerBuyer: max(b.PerBuyer, 1), ValidFrom: b.ValidFrom, ValidUntil: b.ValidUntil}
	var id uuid.UUID
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if id, err = codes.CreateList(ctx, tx, tenantID, t, all); err != nil {
			return err
		}
		if room {
			// Behind a waiting room a presale is a round of the room.
			return waitingroom.AddPresale(ctx, tx, *b.ProductID, *b.ValidFrom, *b.ValidUntil)
		}
		return nil
	})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return s.codeListAnswer(ctx, tenantID, id, http.StatusCreated)
}

// addCodes serves POST /v1/code-lists/{id}/codes.
func (s *Server) addCodes(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body CodesBody
}) (*codeListOutput, error) {
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

func (s *Server) codeListAnswer(ctx context.Context, tenantID, id uuid.UUID, status int) (*codeListOutput, error) {
	l, err := codes.Get(ctx, s.Pool, tenantID, id)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &codeListOutput{status, CodeList{l}}, nil
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
	ID uuid.UUID `path:"id" format:"uuid"`
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

// letIntoPresale lets the buyer reserve before the general sale when a
// presale window of the product is open and their code lets them in;
// otherwise the request is refused now (the claim transaction checks
// again). Behind a waiting room the code was taken when the buyer joined
// the presale's line: the room's admission let them this far.
func (s *Server) letIntoPresale(ctx context.Context, p *product.Product, buyerID, code string) error {
	notOnSale := problem(http.StatusConflict, "NOT_ON_SALE", "the sale opens at "+p.OnSaleAt.UTC().Format(time.RFC3339))
	open, err := codes.PresaleOpen(ctx, s.Pool, p.ID)
	if err != nil {
		return s.toProblem(err)
	}
	if !open {
		return notOnSale
	}
	if p.WaitingRoom != nil && p.WaitingRoom.Enabled {
		in, err := codes.PresaleBuyers(ctx, s.Pool, p.ID, []string{buyerID})
		if err != nil {
			return s.toProblem(err)
		}
		if !in[buyerID] {
			return presaleCodeRequired(p, "join its line with presaleCode")
		}
		return nil
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error { return codes.LetIn(ctx, tx, p.TenantID, p.ID, buyerID, code) })
	var bad *codes.InvalidError
	if errors.As(err, &bad) && bad.Reason == codes.Required {
		return presaleCodeRequired(p, "send presaleCode")
	}
	if err != nil {
		return s.toProblem(err)
	}
	return nil
}

// presaleCodeRequired refuses a buyer without a code during the presale,
// saying what to do.
func presaleCodeRequired(p *product.Product, do string) *Problem {
	return problem(http.StatusForbidden, "PRESALE_CODE_REQUIRED",
		"the presale before the general sale ("+p.OnSaleAt.UTC().Format(time.RFC3339)+") is for code holders: "+do)
}

// PriceBody asks what a hold costs, with a code.
type PriceBody struct {
	DiscountCode string `json:"discountCode,omitempty" maxLength:"40" doc:"A discount code to try"`
}

// priceHold serves POST /v1/holds/{id}/price.
func (s *Server) priceHold(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body PriceBody
}) (*struct{ Body *checkout.Priced }, error) {
	who := caller(ctx)
	p, err := s.Checkout.Price(ctx, who.TenantID, who.BuyerID, in.ID, in.Body.DiscountCode)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *checkout.Priced }{p}, nil
}
