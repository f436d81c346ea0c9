package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"boxoffice/internal/product"
)

// LayoutView is a seated product's venue plan: every seat with its number,
// label, position and price level.
type LayoutView struct {
	ProductID   uuid.UUID            `json:"productId"`
	Version     int                  `json:"version" doc:"Grows each time the seat map is replaced (only before the first hold)"`
	Currency    string               `json:"currency"`
	PriceCents  int64                `json:"priceCents" doc:"Price of seats without a level"`
	PriceLevels []product.PriceLevel `json:"priceLevels"`
	Sections    []SectionView        `json:"sections"`
}

// SectionView is one section of a venue plan.
type SectionView struct {
	Name string    `json:"name"`
	Rows []RowView `json:"rows"`
}

// RowView is one row of a venue plan, its seats in order.
type RowView struct {
	Name  string               `json:"name"`
	Seats []product.PlacedSeat `json:"seats"`
}

// layoutView is a plan rendered once per version, ready to send.
type layoutView struct {
	body *encoded
	etag string
}

func (v *layoutView) size() int { return v.body.size() + len(v.etag) }

// layoutKey names one version of a product's seat map.
type layoutKey struct {
	product uuid.UUID
	version int
}

func (s *Server) loadLayout(ctx context.Context, key layoutKey) (*layoutView, error) {
	p, err := s.Products.GetAny(ctx, key.product)
	if err != nil {
		return nil, err
	}
	if p.Layout == nil {
		return nil, problem(http.StatusNotFound, "NO_LAYOUT", "numbered products have no seat map")
	}
	l := p.Layout
	out := &LayoutView{ProductID: p.ID, Version: p.LayoutVersion, Currency: p.Currency, PriceCents: p.PriceCents,
		PriceLevels: l.PriceLevels, Sections: make([]SectionView, len(l.Sections))}
	if out.PriceLevels == nil {
		out.PriceLevels = []product.PriceLevel{}
	}
	for si := range l.Sections {
		sec := &l.Sections[si]
		sv := SectionView{Name: sec.Name, Rows: make([]RowView, len(sec.Rows))}
		for ri := range sec.Rows {
			row := &sec.Rows[ri]
			rv := RowView{Name: row.Name, Seats: make([]product.PlacedSeat, row.Seats)}
			for i := range row.Seats {
				rv.Seats[i] = l.Seat(sec, row, i)
			}
			sv.Rows[ri] = rv
		}
		out.Sections[si] = sv
	}
	body, err := encode(out, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	return &layoutView{body: body, etag: fmt.Sprintf(`"layout-%s-%d"`, p.ID, p.LayoutVersion)}, nil
}

// getLayout serves GET /v1/products/{id}/layout.
func (s *Server) getLayout(ctx context.Context, in *struct {
	ProductPath
	IfNoneMatch    string `header:"If-None-Match"`
	AcceptEncoding string `header:"Accept-Encoding"`
}) (*encodedOutput, error) {
	p, err := s.publicProduct(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	v, err := s.layouts.Get(ctx, layoutKey{p.ID, p.LayoutVersion})
	if err != nil {
		return nil, s.toProblem(err)
	}
	// Once a number is held the plan never changes: browsers and CDNs may
	// keep it. Before, it may still be replaced, so they revalidate soon.
	cacheControl := "public, max-age=60"
	if a, err := s.availability.Get(ctx, p.ID); err == nil && a.held+a.sold > 0 {
		cacheControl = "public, max-age=86400, immutable"
	}
	return v.body.reply(v.etag, cacheControl, in.IfNoneMatch, in.AcceptEncoding), nil
}

// putLayout serves PUT /v1/products/{id}/layout.
func (s *Server) putLayout(ctx context.Context, in *struct {
	ProductPath
	Body product.Layout
}) (*struct{ Body *product.Product }, error) {
	return s.setLayout(ctx, in.ID, &in.Body)
}

// putSeatMap serves PUT /v1/products/{id}/seat-map.
func (s *Server) putSeatMap(ctx context.Context, in *struct {
	ProductPath
	RawBody []byte `contentType:"text/csv"`
}) (*struct{ Body *product.Product }, error) {
	cur, err := s.Products.Get(ctx, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	var levels []product.PriceLevel
	if cur.Layout != nil {
		levels = cur.Layout.PriceLevels
	}
	l, err := product.ParseCSV(bytes.NewReader(in.RawBody), levels)
	if err != nil {
		return nil, s.toProblem(err)
	}
	if err := s.conforms(l, "INVALID_LAYOUT"); err != nil {
		return nil, err
	}
	return s.setLayout(ctx, in.ID, l)
}

func (s *Server) setLayout(ctx context.Context, id uuid.UUID, l *product.Layout) (*struct{ Body *product.Product }, error) {
	p, err := s.Products.SetLayout(ctx, caller(ctx).TenantID, id, l)
	if err != nil {
		return nil, s.toProblem(err)
	}
	s.productCache.Forget(id)
	return &struct{ Body *product.Product }{p}, nil
}
