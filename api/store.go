package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/codes"
	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/internal/waitingroom"
)

// Sale statuses a store shows.
const (
	SaleUpcoming = "UPCOMING"
	SaleOnSale   = "ON_SALE"
	SaleSoldOut  = "SOLD_OUT"
	SaleClosed   = "CLOSED"
	SaleCanceled = "CANCELLED"
)

// StoreProduct is a product as a store lists it.
type StoreProduct struct {
	ID            uuid.UUID            `json:"id"`
	Slug          string               `json:"slug"`
	Name          string               `json:"name"`
	Description   string               `json:"description"`
	ImageURL      string               `json:"imageUrl"`
	Kind          string               `json:"kind" enum:"seated,numbered"`
	Capacity      int                  `json:"capacity"`
	Available     int                  `json:"available"`
	Held          int                  `json:"held"`
	Sold          int                  `json:"sold"`
	Offered       int                  `json:"offered" doc:"Free numbers held back for the waiting list's offers"`
	PriceCents    int64                `json:"priceCents" doc:"Price of numbers without a price level"`
	FeeCents      int64                `json:"feeCents" doc:"Booking fee per ticket, on top of its price"`
	PriceLevels   []product.PriceLevel `json:"priceLevels" doc:"Seated products' price levels (see GET /layout for which seat is which)"`
	Currency      string               `json:"currency"`
	OnSaleAt      time.Time            `json:"onSaleAt"`
	PerBuyerLimit int                  `json:"perBuyerLimit"`
	HoldSeconds   int                  `json:"holdSeconds"`
	WaitingRoom   bool                 `json:"waitingRoom" doc:"Buyers join the waiting room first"`
	SaleStatus    string               `json:"saleStatus" enum:"UPCOMING,ON_SALE,SOLD_OUT,CLOSED,CANCELLED"`
	CancelReason  string               `json:"cancelReason,omitempty" doc:"Why a CANCELLED date was cancelled"`
	Presale       *codes.Window        `json:"presale,omitempty" doc:"The presale window open now, or the next: code holders may reserve in it (presaleCode)"`
	OffSaleAt     *time.Time           `json:"offSaleAt,omitempty"`
	Event         *product.Event       `json:"event" doc:"What this is a date of: name, description, image, venue, time zone; the dates of a series share it"`
	product.Dates
	Cancellation *StoreCancellation `json:"shopperCancellation,omitempty" doc:"Whether buyers may cancel their own orders of this date (POST /v1/orders/{id}/cancel): until when, and the fee kept per ticket; absent: they may not"`
	Transfers    *StoreTransfers    `json:"transfers,omitempty" doc:"Whether a ticket of this date may be given to someone else (POST /v1/tickets/{id}/transfer), and until when; absent: it may not"`
}

// StoreTransfers is what a shopper is told of a date's transfer policy.
type StoreTransfers struct {
	Until *time.Time `json:"until,omitempty" doc:"The last moment a ticket may change hands; absent while the date is not set"`
}

// StoreCancellation is what a shopper is told of a date's cancellation
// policy.
type StoreCancellation struct {
	Until    time.Time `json:"until" doc:"The last moment an order may be cancelled"`
	FeeCents int64     `json:"feeCents" doc:"Kept per ticket cancelled"`
}

// StoreCatalog is a store's product list.
type StoreCatalog struct {
	Products []StoreProduct `json:"products"`
}

// catalogView is a store's catalog ready to send, with its ETag.
type catalogView struct {
	tenantID uuid.UUID
	body     *StoreCatalog
	etag     string
}

// profileView is a store's profile ready to send.
type profileView struct {
	tenantID uuid.UUID
	body     *tenant.Profile
	etag     string
}

// saleStatus is what a shopper is told about a product's sale.
func saleStatus(p *product.Product, available int, now time.Time) string {
	switch {
	case p.Publication == product.Cancelled:
		return SaleCanceled
	case p.Publication == product.Closed, p.OffSaleAt != nil && !now.Before(*p.OffSaleAt):
		return SaleClosed
	case available == 0:
		return SaleSoldOut
	case now.Before(p.OnSaleAt):
		return SaleUpcoming
	}
	return SaleOnSale
}

// loadCatalog builds a store's catalog: its published and closed products
// (never drafts) with their counters and presale windows, three queries
// whatever the size.
func (s *Server) loadCatalog(ctx context.Context, slug string) (*catalogView, error) {
	profile, err := s.profiles.Get(ctx, slug)
	if err != nil {
		return nil, err
	}
	tenantID := profile.tenantID
	list, err := s.Products.ListInStore(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(list))
	for i, p := range list {
		ids[i] = p.ID
	}
	counts, err := inventory.CountsOf(ctx, s.Pool, ids)
	if err != nil {
		return nil, err
	}
	presales, err := codes.PresaleWindows(ctx, s.Pool, ids)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := &StoreCatalog{Products: make([]StoreProduct, len(list))}
	for i, p := range list {
		c := counts[p.ID]
		levels := []product.PriceLevel{}
		if p.Layout != nil && p.Layout.PriceLevels != nil {
			levels = p.Layout.PriceLevels
		}
		out.Products[i] = StoreProduct{PriceLevels: levels, ID: p.ID, Slug: p.Slug, Name: p.Name, Description: p.Description, ImageURL: p.ImageURL,
			Kind: p.Kind, Capacity: p.Capacity, Available: c.Available, Held: c.Held, Sold: c.Sold, Offered: c.Offered,
			PriceCents: p.PriceCents, FeeCents: p.FeeCents, Currency: p.Currency, OnSaleAt: p.OnSaleAt, PerBuyerLimit: p.PerBuyerLimit,
			HoldSeconds: p.HoldSeconds, WaitingRoom: p.WaitingRoom != nil, SaleStatus: saleStatus(p, c.Available, now),
			OffSaleAt: p.OffSaleAt, Event: p.Event, Dates: p.Dates, CancelReason: p.CancelReason}
		if w, ok := presales[p.ID]; ok {
			out.Products[i].Presale = &w
		}
		// A cancelled date's orders are refunded whole: nothing is left for
		// its buyers to cancel or give away.
		if p.Publication != product.Cancelled {
			if until := p.Cancellation.Until(p.Dates); until != nil {
				out.Products[i].Cancellation = &StoreCancellation{Until: *until, FeeCents: p.Cancellation.FeeCents}
			}
			if p.Transfers != nil {
				out.Products[i].Transfers = &StoreTransfers{Until: p.Transfers.Until(p.Dates)}
			}
		}
	}
	return &catalogView{tenantID: tenantID, body: out, etag: etagOf(out)}, nil
}

// etagOf is a strong ETag of a JSON body.
func etagOf(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// StorePath names a store.
type StorePath struct {
	Slug string `path:"tenantSlug" maxLength:"100" doc:"The tenant's slug"`
}

// getStore serves GET /v1/stores/{tenantSlug}.
func (s *Server) getStore(ctx context.Context, in *struct {
	StorePath
	IfNoneMatch string `header:"If-None-Match"`
}) (*cachedOutput[*tenant.Profile], error) {
	v, err := s.profiles.Get(ctx, in.Slug)
	if err != nil {
		return nil, s.toProblem(err)
	}
	setOwner(ctx, v.tenantID)
	return cached(v.body, v.etag, "public, max-age=60", in.IfNoneMatch), nil
}

// listStoreProducts serves GET /v1/stores/{tenantSlug}/products.
func (s *Server) listStoreProducts(ctx context.Context, in *struct {
	StorePath
	IfNoneMatch string `header:"If-None-Match"`
}) (*cachedOutput[*StoreCatalog], error) {
	v, err := s.catalogs.Get(ctx, in.Slug)
	if err != nil {
		return nil, s.toProblem(err)
	}
	setOwner(ctx, v.tenantID)
	return cached(v.body, v.etag, "public, max-age=5", in.IfNoneMatch), nil
}

// StoreBody is what a tenant admin sets about the store.
type StoreBody struct {
	Name    string            `json:"name" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	Theme   map[string]string `json:"theme,omitempty" doc:"primary, accent, background, text (#rrggbb) and logoUrl (https)"`
	Domains []string          `json:"domains,omitempty" maxItems:"20" doc:"Hosts the store is served on (e.g. tickets.example.com); each belongs to one tenant"`
	// SMSCountries are where login codes may go by SMS.
	SMSCountries []string `json:"smsCountries,omitempty" maxItems:"50" doc:"Calling codes (+351, +44, ...) login codes may be sent to by SMS; none: e-mail only"`
}

// putStore serves PUT /v1/store.
func (s *Server) putStore(ctx context.Context, in *struct{ Body StoreBody }) (*struct{ Body *tenant.Profile }, error) {
	if err := s.checkDomains(in.Body.Domains); err != nil {
		return nil, err
	}
	if logo := in.Body.Theme["logoUrl"]; logo != "" {
		cur, err := s.Tenants.ProfileOf(ctx, caller(ctx).TenantID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		if cur.Theme["logoUrl"] != logo {
			if err := s.checkLogo(ctx, cur.Slug, logo); err != nil {
				return nil, err
			}
		}
	}
	p, err := s.Tenants.SetStore(ctx, caller(ctx).TenantID, tenant.StoreSettings{
		Name: in.Body.Name, Theme: in.Body.Theme, Domains: in.Body.Domains, SMSCountries: in.Body.SMSCountries})
	if err != nil {
		return nil, s.toProblem(err)
	}
	s.profiles.Forget(p.Slug)
	s.catalogs.Forget(p.Slug)
	s.forgetDomains()
	if s.StoreBucket != nil && s.River != nil {
		// The store is rebuilt with the new name, theme and domains by a
		// work process; a failure is retried there, not shown here.
		if _, err := s.River.Insert(ctx, storefront.PublishArgs{TenantSlug: p.Slug}, nil); err != nil {
			return nil, s.toProblem(fmt.Errorf("queue the store's republish: %w", err))
		}
	}
	return &struct{ Body *tenant.Profile }{p}, nil
}

// imageTypes are the image formats a store takes (logos, pictures), by content type. Not SVG:
// an SVG is a document that can run script on the origin that serves it.
var imageTypes = map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}

// MaxLogoBytes is the largest logo a store takes.
const MaxLogoBytes = 256 << 10

// uploadsPerHour caps the upload URLs one tenant is given an hour (in
// each API process): each may leave an object in the bucket.
const uploadsPerHour = 20

// checkDomains refuses store domains that are the API's or the console's
// own hosts.
func (s *Server) checkDomains(domains []string) error {
	for _, d := range domains {
		d = strings.ToLower(strings.TrimSpace(d))
		host := d
		if h, _, err := net.SplitHostPort(d); err == nil {
			host = h
		}
		for _, r := range s.ReservedHosts {
			if d == r || host == r {
				return problem(http.StatusUnprocessableEntity, "INVALID_STORE",
					fmt.Sprintf("domain %q is this service's own host, not a store's", d))
			}
		}
	}
	return nil
}

// An upload is a file a tenant put in its store's files through a
// presigned URL: a logo (logo/…) or an event's picture (images/…).
type uploadKind struct {
	prefix, what string
	max          int64
}

var (
	logoUploads  = uploadKind{prefix: "logo/", what: "logo", max: MaxLogoBytes}
	imageUploads = uploadKind{prefix: "images/", what: "picture", max: MaxImageBytes}
)

// MaxImageBytes is the largest event picture a store takes.
const MaxImageBytes = 2 << 20

// checkLogo makes sure the logo a theme names was uploaded to the tenant's
// files and is what its name says.
func (s *Server) checkLogo(ctx context.Context, slug, logoURL string) error {
	return s.checkUpload(ctx, slug, logoURL, logoUploads, "INVALID_STORE", "theme logoUrl")
}

// checkImage does the same for an event's picture, when it is an upload
// rather than an https URL.
func (s *Server) checkImage(ctx context.Context, tenantID uuid.UUID, imageURL *string) error {
	if imageURL == nil || !strings.HasPrefix(*imageURL, imageUploads.prefix) {
		return nil
	}
	v, err := s.Tenants.ProfileOf(ctx, tenantID)
	if err != nil {
		return s.toProblem(err)
	}
	return s.checkUpload(ctx, v.Slug, *imageURL, imageUploads, "INVALID_IMAGE", "imageUrl")
}

// checkUpload makes sure a file named by rel was uploaded to the tenant's
// files and is what its name says: an image of an allowed type, at most the
// kind's size. A refused upload is deleted, so the store never serves it.
func (s *Server) checkUpload(ctx context.Context, slug, rel string, kind uploadKind, code, field string) error {
	if !strings.HasPrefix(rel, kind.prefix) || s.StoreBucket == nil {
		return nil
	}
	key := slug + "/" + rel
	up, err := s.StoreBucket.Inspect(ctx, key)
	if errors.Is(err, storefront.ErrNoUpload) {
		return problem(http.StatusUnprocessableEntity, code, field+": nothing was uploaded there (PUT the file to uploadUrl first)")
	}
	if err != nil {
		return s.toProblem(err)
	}
	sniffed := http.DetectContentType(up.Head)
	ext := rel[strings.LastIndexByte(rel, '.')+1:]
	var why string
	switch {
	case up.Size > kind.max:
		why = fmt.Sprintf("the %s is %d bytes; at most %d", kind.what, up.Size, kind.max)
	case imageTypes[sniffed] != ext || imageTypes[strings.ToLower(up.ContentType)] != ext:
		why = fmt.Sprintf("the file is %s (uploaded as %s), not the %s its name says", sniffed, up.ContentType, ext)
	default:
		return nil
	}
	if err := s.StoreBucket.Delete(ctx, key); err != nil {
		s.Logger.WarnContext(ctx, "deleting a refused upload", "key", key, "error", err)
	}
	return problem(http.StatusUnprocessableEntity, code, field+": "+why)
}

// LogoUpload is where to PUT a logo, and what to set as the theme's logoUrl.
type LogoUpload struct {
	UploadURL string    `json:"uploadUrl" doc:"PUT the file here with the same Content-Type, straight to the bucket (never through the API)"`
	LogoURL   string    `json:"logoUrl" doc:"Then set theme.logoUrl to this (relative to the store) with PUT /v1/store"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ImageUpload is where to PUT an event's picture, and what to set as its
// imageUrl.
type ImageUpload struct {
	UploadURL string    `json:"uploadUrl" doc:"PUT the file here with the same Content-Type, straight to the bucket (never through the API)"`
	ImageURL  string    `json:"imageUrl" doc:"Then set the event's (or product's) imageUrl to this, relative to the store"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// UploadBody asks for an upload URL.
type UploadBody struct {
	ContentType string `json:"contentType" enum:"image/png,image/jpeg,image/webp" doc:"Logos at most 256 KiB, pictures 2 MiB; checked when the file is named"`
}

// logoUpload serves POST /v1/store/logo.
func (s *Server) logoUpload(ctx context.Context, in *struct{ Body UploadBody }) (*struct{ Body LogoUpload }, error) {
	url, name, expires, err := s.presignUpload(ctx, logoUploads, in.Body.ContentType)
	if err != nil {
		return nil, err
	}
	return &struct{ Body LogoUpload }{LogoUpload{UploadURL: url, LogoURL: name, ExpiresAt: expires}}, nil
}

// imageUpload serves POST /v1/store/images.
func (s *Server) imageUpload(ctx context.Context, in *struct{ Body UploadBody }) (*struct{ Body ImageUpload }, error) {
	url, name, expires, err := s.presignUpload(ctx, imageUploads, in.Body.ContentType)
	if err != nil {
		return nil, err
	}
	return &struct{ Body ImageUpload }{ImageUpload{UploadURL: url, ImageURL: name, ExpiresAt: expires}}, nil
}

// presignUpload gives the caller's tenant a URL to PUT one file of the kind
// to its store's files, under a fresh name.
func (s *Server) presignUpload(ctx context.Context, kind uploadKind, contentType string) (url, name string, expires time.Time, err error) {
	if s.StoreBucket == nil {
		return "", "", time.Time{}, problem(http.StatusServiceUnavailable, "STORES_UNAVAILABLE", "this deployment publishes no stores")
	}
	v, err := s.Tenants.ProfileOf(ctx, caller(ctx).TenantID)
	if err != nil {
		return "", "", time.Time{}, s.toProblem(err)
	}
	if !s.uploads.allow(v.Slug, time.Now()) {
		p := problem(http.StatusTooManyRequests, "RATE_LIMITED", fmt.Sprintf("at most %d uploads an hour", uploadsPerHour))
		p.Headers = http.Header{"Retry-After": {"3600"}}
		return "", "", time.Time{}, p
	}
	name = kind.prefix + uuid.NewString() + "." + imageTypes[contentType]
	const ttl = 10 * time.Minute
	url, err = s.StoreBucket.PresignPut(ctx, v.Slug+"/"+name, contentType, ttl)
	if err != nil {
		return "", "", time.Time{}, s.toProblem(err)
	}
	return url, name, time.Now().Add(ttl).UTC(), nil
}

// ProductPatch is a change to a product; absent fields stay.
type ProductPatch struct {
	Name          *string               `json:"name,omitempty" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	Description   *string               `json:"description,omitempty" maxLength:"5000"`
	ImageURL      *string               `json:"imageUrl,omitempty" maxLength:"500" pattern:"^(https://[^\\s\"'<>]+|images/[0-9a-f-]{36}\\.(png|jpg|webp))?$" doc:"an https URL, a picture uploaded with POST /v1/store/images, or empty"`
	PriceCents    *int64                `json:"priceCents,omitempty" minimum:"0" maximum:"100000000" doc:"Not once a number is held or sold"`
	FeeCents      *int64                `json:"feeCents,omitempty" minimum:"0" maximum:"100000000" doc:"Booking fee per ticket; not once a number is held or sold"`
	OnSaleAt      *time.Time            `json:"onSaleAt,omitempty" doc:"Only before the sale opens, and not into the past"`
	WaitingRoom   *waitingroom.Settings `json:"waitingRoom,omitempty" doc:"Turn the room on or off or change it; only before the sale opens"`
	Publication   *string               `json:"publication,omitempty" enum:"PUBLISHED,CLOSED" doc:"PUBLISHED puts a draft in the store (or reopens a closed sale); CLOSED ends the sale"`
	RefundPolicy  *string               `json:"refundPolicy,omitempty" enum:"resell,keep" doc:"Whether seats refunded from now on go back on sale"`
	Cancellation  *product.Cancellation `json:"shopperCancellation,omitempty" doc:"Set the buyers' cancellation window and fee; {\"off\": true} turns it off"`
	Transfers     *product.Transfers    `json:"transfers,omitempty" doc:"Set whether and until when tickets may be transferred, and how many times; {\"off\": true} turns it off"`
	PerBuyerLimit *int                  `json:"perBuyerLimit,omitempty" minimum:"1" maximum:"100" doc:"Numbers one buyer may hold or own at once, from the next claim on (also mid-sale)"`
	HoldSeconds   *int                  `json:"holdSeconds,omitempty" minimum:"30" maximum:"86400" doc:"How long new holds last (holds already made keep their expiry)"`
	DateFields
}

// updateProduct serves PATCH /v1/products/{id}.
func (s *Server) updateProduct(ctx context.Context, in *struct {
	ProductPath
	Body ProductPatch
}) (*struct{ Body *product.Product }, error) {
	b := in.Body
	if err := s.checkImage(ctx, caller(ctx).TenantID, b.ImageURL); err != nil {
		return nil, err
	}
	p, err := s.Products.Update(ctx, caller(ctx).TenantID, in.ID, product.Update{Name: b.Name, Description: b.Description,
		ImageURL: b.ImageURL, PriceCents: b.PriceCents, FeeCents: b.FeeCents, OnSaleAt: b.OnSaleAt, WaitingRoom: b.WaitingRoom, Publication: b.Publication,
		RefundPolicy: b.RefundPolicy, StartsAt: b.StartsAt, DoorsAt: b.DoorsAt, EndsAt: b.EndsAt, OffSaleAt: b.OffSaleAt, Cancellation: b.Cancellation,
		Transfers: b.Transfers, PerBuyerLimit: b.PerBuyerLimit, HoldSeconds: b.HoldSeconds})
	if err != nil {
		return nil, s.toProblem(err)
	}
	// This process sees the change at once; others within their caches'
	// lifetimes (seconds), and the claim transaction reads it fresh.
	s.productCache.Forget(p.ID)
	return &struct{ Body *product.Product }{p}, nil
}

// StorePublishQueued says a store's rebuild is queued.
type StorePublishQueued struct {
	Slug     string `json:"slug"`
	StoreURL string `json:"storeUrl,omitempty" doc:"Where the published store is served (BOXOFFICE_STORES_URL; boxoffice dev's store server); absent when a CDN serves it"`
}

// publishStore serves POST /v1/store/publish.
func (s *Server) publishStore(ctx context.Context, _ *struct{}) (*struct{ Body StorePublishQueued }, error) {
	if s.StoreBucket == nil || s.River == nil {
		return nil, problem(http.StatusServiceUnavailable, "STORES_UNAVAILABLE", "this deployment publishes no stores (BOXOFFICE_STORE_BUCKET)")
	}
	p, err := s.Tenants.ProfileOf(ctx, caller(ctx).TenantID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	if _, err := s.River.Insert(ctx, storefront.PublishArgs{TenantSlug: p.Slug}, nil); err != nil {
		return nil, s.toProblem(fmt.Errorf("queue the store's publish: %w", err))
	}
	out := StorePublishQueued{Slug: p.Slug}
	if s.StoresURL != "" {
		out.StoreURL = s.StoresURL + "/s/" + p.Slug + "/"
	}
	return &struct{ Body StorePublishQueued }{out}, nil
}
