package api

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/waitingroom"
)

// ProductBody is a new product.
type ProductBody struct {
	Slug          string                `json:"slug" minLength:"1" maxLength:"100" pattern:"^[a-z0-9][a-z0-9-]*$"`
	Name          string                `json:"name" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	Kind          string                `json:"kind" enum:"seated,numbered" doc:"seated events need a layout; numbered items (raffles) take none"`
	Capacity      int                   `json:"capacity" minimum:"1" maximum:"10000000" doc:"Numbers are 1..capacity; a layout's seats must add up to it"`
	Layout        *product.Layout       `json:"layout,omitempty" doc:"Sections and rows, best first; seats are numbered in this order"`
	SeatMap       string                `json:"seatMap,omitempty" maxLength:"5000000" doc:"Instead of layout: the seat map as CSV (section,row,seat,x,y,price_level, as PUT /v1/products/{id}/seat-map takes), with the prices of its levels in priceLevels"`
	PriceLevels   []product.PriceLevel  `json:"priceLevels,omitempty" maxItems:"100" doc:"With seatMap: the price of each level it names"`
	PriceCents    int64                 `json:"priceCents" minimum:"0" maximum:"100000000" doc:"Price per number in minor units"`
	FeeCents      int64                 `json:"feeCents,omitempty" minimum:"0" maximum:"100000000" doc:"Booking fee per ticket, on top of its price (default 0)"`
	Currency      string                `json:"currency" pattern:"^[A-Z]{3}$" doc:"ISO 4217 code"`
	PerBuyerLimit int                   `json:"perBuyerLimit,omitempty" minimum:"1" maximum:"100" doc:"Default 6"`
	HoldSeconds   int                   `json:"holdSeconds,omitempty" minimum:"30" maximum:"86400" doc:"Default 480"`
	OnSaleAt      *time.Time            `json:"onSaleAt,omitempty" doc:"Default now"`
	Description   string                `json:"description,omitempty" maxLength:"5000"`
	ImageURL      string                `json:"imageUrl,omitempty" maxLength:"500" pattern:"^(https://[^\\s\"'<>]+|images/[0-9a-f-]{36}\\.(png|jpg|webp))$" doc:"an https URL, or a picture uploaded with POST /v1/store/images"`
	Publication   string                `json:"publication,omitempty" enum:"PUBLISHED,DRAFT" doc:"Default PUBLISHED; a DRAFT is not in the store until published"`
	WaitingRoom   *waitingroom.Settings `json:"waitingRoom,omitempty" doc:"Turn on the virtual waiting room: buyers join the queue and need an access token to reserve and pay"`
	RefundPolicy  string                `json:"refundPolicy,omitempty" enum:"resell,keep" doc:"Default resell: a refunded seat goes back on sale; keep leaves it off sale"`
	Cancellation  *product.Cancellation `json:"shopperCancellation,omitempty" doc:"Let buyers cancel their own orders until hoursBefore doors (or the start), for feeCents per ticket; default: they may not"`
	Transfers     *product.Transfers    `json:"transfers,omitempty" doc:"Let ticket holders hand tickets to another e-mail address until hoursBefore doors (or the start), each seat maxTimes times (default 1); default: they may not"`
	EventID       *uuid.UUID            `json:"eventId,omitempty" format:"uuid" doc:"Make this a date of an existing event (a series); description and imageUrl are then the event's"`
	Event         *EventBody            `json:"event,omitempty" doc:"Instead of eventId: a new event for this date; without either the product gets an event of its own, named after it"`
	DateFields
}

// ProductList is a page of products.
type ProductList struct {
	Products []*product.Product `json:"products"`
}

// Availability is a product's advisory availability.
type Availability struct {
	ProductID uuid.UUID         `json:"productId"`
	Capacity  int               `json:"capacity"`
	Available int               `json:"available"`
	Held      int               `json:"held"`
	Sold      int               `json:"sold"`
	Version   int64             `json:"version" doc:"Increases with every change"`
	Bitmap    string            `json:"bitmap,omitempty" doc:"Base64 of ceil(capacity/8) bytes; number n is bit (n-1)%8 (least significant first) of byte (n-1)/8; set = held or sold. Only for products of up to 1,000,000 numbers: larger ones are read page by page"`
	PageSize  int               `json:"pageSize" doc:"Numbers per page of the bitmap (16384)"`
	Pages     []AvailabilityRef `json:"pages" doc:"Every page of the bitmap: a client showing some numbers fetches their pages, again only when their version moved"`
}

// AvailabilityRef is one page in the availability's index.
type AvailabilityRef struct {
	Page    int    `json:"page" doc:"Page p holds numbers p*pageSize+1 .. (p+1)*pageSize"`
	First   int    `json:"first"`
	Last    int    `json:"last"`
	Version int64  `json:"version" doc:"The availability version that last changed the page"`
	Taken   int    `json:"taken" doc:"Numbers of the page held or sold"`
	Href    string `json:"href" doc:"The page's bitmap"`
}

// AvailabilityPage is one page of a product's bitmap.
type AvailabilityPage struct {
	ProductID uuid.UUID `json:"productId"`
	Page      int       `json:"page"`
	First     int       `json:"first"`
	Last      int       `json:"last"`
	Version   int64     `json:"version"`
	Taken     int       `json:"taken"`
	Bitmap    string    `json:"bitmap" doc:"Base64 of ceil((last-first+1)/8) bytes; number first+i is bit i%8 (least significant first) of byte i/8; set = held or sold"`
}

func newAvailabilityView(s *inventory.Snapshot) (*availabilityView, error) {
	a := &Availability{
		ProductID: s.ProductID, Capacity: s.Capacity, Available: s.Available, Held: s.Held, Sold: s.Sold,
		Version: s.Version, PageSize: inventory.PageBits, Pages: make([]AvailabilityRef, len(s.Pages)),
	}
	versions := make([]int64, len(s.Pages))
	for i, p := range s.Pages {
		a.Pages[i] = AvailabilityRef{Page: p.Index, First: p.First(), Last: p.Last(s.Capacity), Version: p.Version,
			Taken: p.Taken, Href: fmt.Sprintf("/v1/products/%s/availability/pages/%d", s.ProductID, p.Index)}
		versions[i] = p.Version
	}
	if s.Capacity <= inventory.WholeBitmapUpTo {
		a.Bitmap = base64.StdEncoding.EncodeToString(s.Bitmap())
	}
	body, err := encode(a, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	return &availabilityView{body: body, held: s.Held, sold: s.Sold, pages: versions,
		etag: fmt.Sprintf(`"%s-%d"`, s.ProductID, s.Version)}, nil
}

// pageKey names one version of one page of a product's bitmap.
type pageKey struct {
	product uuid.UUID
	page    int
	version int64
}

// pageView is a cached, ready-to-send page of a bitmap.
type pageView struct {
	body *encoded
	etag string
}

func (v *pageView) size() int { return v.body.size() + len(v.etag) + 64 }

// loadAvailabilityPage reads a page at the version the product's cached
// index names, or a newer one: the page answers with its own version.
func (s *Server) loadAvailabilityPage(ctx context.Context, key pageKey) (*pageView, error) {
	snap, err := inventory.GetPages(ctx, s.Pool, key.product, []int{key.page})
	if err != nil {
		return nil, err
	}
	if len(snap.Pages) == 0 {
		return nil, db.ErrNotFound
	}
	p := snap.Pages[0]
	body, err := encode(&AvailabilityPage{ProductID: key.product, Page: p.Index, First: p.First(),
		Last: p.Last(snap.Capacity), Version: p.Version, Taken: p.Taken,
		Bitmap: base64.StdEncoding.EncodeToString(p.Bits)}, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	return &pageView{body: body, etag: fmt.Sprintf(`"%s-p%d-%d"`, key.product, p.Index, p.Version)}, nil
}

type ProductPath struct {
	ID uuid.UUID `path:"id" format:"uuid" doc:"Product id"`
}

// buyersProduct is a product the calling buyer may see (404 otherwise).
func (s *Server) buyersProduct(ctx context.Context, path ProductPath) (*product.Product, error) {
	p, err := s.productCache.Get(ctx, path.ID)
	if err == nil && (p.TenantID != caller(ctx).TenantID || p.HiddenFromBuyers()) {
		err = db.ErrNotFound
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	return p, nil
}

// publicProduct is a product anyone may see (from the cache: only its
// tenant and publication are read), marked as the response's owner for
// CORS; drafts and rehearsals' shadows are not found.
func (s *Server) publicProduct(ctx context.Context, id uuid.UUID) (*product.Product, error) {
	p, err := s.productCache.Get(ctx, id)
	if err != nil {
		return nil, s.toProblem(err)
	}
	if p.HiddenFromBuyers() {
		return nil, problem(http.StatusNotFound, "NOT_FOUND", "no such product")
	}
	setOwner(ctx, p.TenantID)
	return p, nil
}

// cachedOutput is a response browsers and CDNs may keep, revalidated with
// its ETag.
type cachedOutput[T any] struct {
	Status       int
	ETag         string `header:"ETag"`
	CacheControl string `header:"Cache-Control"`
	Body         T
}

// cached answers with body, or 304 without it when the caller already has
// this version (ifNoneMatch is its ETag).
func cached[T any](body T, etag, cacheControl, ifNoneMatch string) *cachedOutput[T] {
	out := &cachedOutput[T]{Status: http.StatusOK, ETag: etag, CacheControl: cacheControl}
	if ifNoneMatch == etag {
		out.Status = http.StatusNotModified
		return out
	}
	out.Body = body
	return out
}

// createProduct serves POST /v1/products.
func (s *Server) createProduct(ctx context.Context, in *struct {
	Body ProductBody
}) (*struct{ Body *product.Product }, error) {
	tenantID := caller(ctx).TenantID
	b := in.Body
	if err := s.checkImage(ctx, tenantID, &b.ImageURL); err != nil {
		return nil, err
	}
	p := product.CreateParams{
		TenantID: tenantID, Slug: b.Slug, Name: b.Name, Kind: b.Kind, Capacity: b.Capacity, Layout: b.Layout,
		PriceCents: b.PriceCents, FeeCents: b.FeeCents, Currency: b.Currency, PerBuyerLimit: b.PerBuyerLimit, HoldSeconds: b.HoldSeconds,
		WaitingRoom: b.WaitingRoom, Description: b.Description, ImageURL: b.ImageURL, Publication: b.Publication,
		RefundPolicy: b.RefundPolicy, EventID: b.EventID, OffSaleAt: b.OffSaleAt, Cancellation: b.Cancellation, Transfers: b.Transfers,
		Dates: product.Dates{StartsAt: b.StartsAt, DoorsAt: b.DoorsAt, EndsAt: b.EndsAt},
	}
	if b.Event != nil {
		if b.EventID != nil {
			return nil, problem(http.StatusUnprocessableEntity, "INVALID_EVENT", "give eventId or event, not both")
		}
		e := b.Event.params()
		p.Event = &e
	}
	if b.OnSaleAt != nil {
		p.OnSaleAt = *b.OnSaleAt
	}
	// A seat map in CSV is read before anything is written: a create that
	// fails leaves no draft behind.
	switch {
	case b.SeatMap != "" && b.Layout != nil:
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_LAYOUT", "give layout or seatMap, not both")
	case b.SeatMap != "":
		l, err := product.ParseCSV(strings.NewReader(b.SeatMap), b.PriceLevels)
		if err != nil {
			return nil, s.toProblem(err)
		}
		if err := s.conforms(l, "INVALID_LAYOUT"); err != nil {
			return nil, err
		}
		p.Layout = l
	case len(b.PriceLevels) > 0:
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_LAYOUT", "priceLevels go with seatMap (a layout carries its own)")
	}
	created, err := s.Products.Create(ctx, p)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *product.Product }{created}, nil
}

// listProducts serves GET /v1/products.
func (s *Server) listProducts(ctx context.Context, in *struct {
	Limit int `query:"limit" minimum:"1" maximum:"500" default:"100"`
}) (*struct{ Body ProductList }, error) {
	tenantID := caller(ctx).TenantID
	list, err := s.Products.List(ctx, tenantID, in.Limit)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body ProductList }{ProductList{Products: list}}, nil
}

// getProduct serves GET /v1/products/{id}.
func (s *Server) getProduct(ctx context.Context, in *struct {
	ProductPath
}) (*struct{ Body *product.Product }, error) {
	who := caller(ctx)
	p, err := s.Products.Get(ctx, who.TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	if who.BuyerID != "" && p.HiddenFromBuyers() {
		return nil, problem(http.StatusNotFound, "NOT_FOUND", "no such product")
	}
	return &struct{ Body *product.Product }{p}, nil
}

// getAvailability serves GET /v1/products/{id}/availability.
func (s *Server) getAvailability(ctx context.Context, in *struct {
	ProductPath
	IfNoneMatch    string `header:"If-None-Match"`
	AcceptEncoding string `header:"Accept-Encoding"`
}) (*encodedOutput, error) {
	if _, err := s.publicProduct(ctx, in.ID); err != nil {
		return nil, err
	}
	v, err := s.availability.Get(ctx, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return v.body.reply(v.etag, "public, max-age=1", in.IfNoneMatch, in.AcceptEncoding), nil
}

// getAvailabilityPage serves GET /v1/products/{id}/availability/pages/{page}:
// the product's cached index names the page's version, and each version of
// a page is read and encoded once.
func (s *Server) getAvailabilityPage(ctx context.Context, in *struct {
	ProductPath
	Page           int    `path:"page" minimum:"0" doc:"Page number, from 0"`
	IfNoneMatch    string `header:"If-None-Match"`
	AcceptEncoding string `header:"Accept-Encoding"`
}) (*encodedOutput, error) {
	if _, err := s.publicProduct(ctx, in.ID); err != nil {
		return nil, err
	}
	idx, err := s.availability.Get(ctx, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	if in.Page >= len(idx.pages) {
		return nil, problem(http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("the product has pages 0 to %d", len(idx.pages)-1))
	}
	v, err := s.availabilityPages.Get(ctx, pageKey{in.ID, in.Page, idx.pages[in.Page]})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return v.body.reply(v.etag, "public, max-age=1", in.IfNoneMatch, in.AcceptEncoding), nil
}
