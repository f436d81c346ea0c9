package api

import (
	"context"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/product"
)

// VenueBody is where an event takes place.
type VenueBody struct {
	Name    string `json:"name,omitempty" maxLength:"200" pattern:"^[^\\p{Cc}]*$"`
	Address string `json:"address,omitempty" maxLength:"500" pattern:"^[^\\p{Cc}]*$"`
	MapURL  string `json:"mapUrl,omitempty" maxLength:"500" pattern:"^(https://[^\\s\"'<>]+)?$"`
}

// EventBody is a new event.
type EventBody struct {
	Slug        string     `json:"slug" minLength:"1" maxLength:"100" pattern:"^[a-z0-9][a-z0-9-]*$"`
	Name        string     `json:"name" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$"`
	Description string     `json:"description,omitempty" maxLength:"5000"`
	ImageURL    string     `json:"imageUrl,omitempty" maxLength:"500" pattern:"^(https://[^\\s\"'<>]+|images/[0-9a-f-]{36}\\.(png|jpg|webp))?$" doc:"The picture: an https URL, or one uploaded with POST /v1/store/images"`
	EntryNote   string     `json:"entryNote,omitempty" maxLength:"500" pattern:"^[^\\p{Cc}]*$" doc:"Age limit or entry conditions"`
	Venue       *VenueBody `json:"venue,omitempty"`
	TimeZone    string     `json:"timeZone,omitempty" maxLength:"64" doc:"IANA time zone of the venue; default UTC"`
}

func (b *EventBody) params() product.EventParams {
	p := product.EventParams{Slug: b.Slug, Name: b.Name, Description: b.Description, ImageURL: b.ImageURL,
		EntryNote: b.EntryNote, TimeZone: b.TimeZone}
	if b.Venue != nil {
		p.Venue = product.Venue(*b.Venue)
	}
	return p
}

// EventWithDates is an event and its dates (products).
type EventWithDates struct {
	*product.Event
	Dates []*product.Product `json:"dates"`
}

// EventPath names an event.
type EventPath struct {
	ID uuid.UUID `path:"id" format:"uuid" doc:"Event id"`
}

// createEvent serves POST /v1/events.
func (s *Server) createEvent(ctx context.Context, in *struct{ Body EventBody }) (*struct{ Body *product.Event }, error) {
	if err := s.checkImage(ctx, caller(ctx).TenantID, &in.Body.ImageURL); err != nil {
		return nil, err
	}
	e, err := s.Products.CreateEvent(ctx, caller(ctx).TenantID, in.Body.params())
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *product.Event }{e}, nil
}

// EventList is the tenant's events.
type EventList struct {
	Events []*product.Event `json:"events"`
}

// listEvents serves GET /v1/events.
func (s *Server) listEvents(ctx context.Context, in *struct {
	Limit int `query:"limit" minimum:"1" maximum:"500" default:"100"`
}) (*struct{ Body EventList }, error) {
	list, err := s.Products.ListEvents(ctx, caller(ctx).TenantID, in.Limit)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body EventList }{EventList{list}}, nil
}

// getEvent serves GET /v1/events/{id}.
func (s *Server) getEvent(ctx context.Context, in *EventPath) (*struct{ Body EventWithDates }, error) {
	return s.eventWithDates(ctx, in.ID)
}

func (s *Server) eventWithDates(ctx context.Context, id uuid.UUID) (*struct{ Body EventWithDates }, error) {
	tenantID := caller(ctx).TenantID
	e, err := s.Products.GetEvent(ctx, tenantID, id)
	if err != nil {
		return nil, s.toProblem(err)
	}
	dates, err := s.Products.DatesOf(ctx, tenantID, id)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body EventWithDates }{EventWithDates{Event: e, Dates: dates}}, nil
}

// EventPatch is a change to an event; absent fields stay.
type EventPatch struct {
	Name        *string    `json:"name,omitempty" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$"`
	Description *string    `json:"description,omitempty" maxLength:"5000"`
	ImageURL    *string    `json:"imageUrl,omitempty" maxLength:"500" pattern:"^(https://[^\\s\"'<>]+|images/[0-9a-f-]{36}\\.(png|jpg|webp))?$" doc:"The picture: an https URL, or one uploaded with POST /v1/store/images"`
	EntryNote   *string    `json:"entryNote,omitempty" maxLength:"500" pattern:"^[^\\p{Cc}]*$"`
	Venue       *VenueBody `json:"venue,omitempty" doc:"The whole venue; a change is told to every ticket holder"`
	TimeZone    *string    `json:"timeZone,omitempty" maxLength:"64"`
}

// updateEvent serves PATCH /v1/events/{id}.
func (s *Server) updateEvent(ctx context.Context, in *struct {
	EventPath
	Body EventPatch
}) (*struct{ Body EventWithDates }, error) {
	b := in.Body
	if err := s.checkImage(ctx, caller(ctx).TenantID, b.ImageURL); err != nil {
		return nil, err
	}
	u := product.EventUpdate{Name: b.Name, Description: b.Description, ImageURL: b.ImageURL, EntryNote: b.EntryNote,
		TimeZone: b.TimeZone}
	if b.Venue != nil {
		v := product.Venue(*b.Venue)
		u.Venue = &v
	}
	if _, err := s.Products.UpdateEvent(ctx, caller(ctx).TenantID, in.ID, u); err != nil {
		return nil, s.toProblem(err)
	}
	// The dates' cached copies carry the event.
	dates, err := s.eventWithDates(ctx, in.ID)
	if err == nil {
		for _, p := range dates.Body.Dates {
			s.productCache.Forget(p.ID)
		}
	}
	return dates, err
}

// DateFields are a product's dates in a request body.
type DateFields struct {
	StartsAt  *time.Time `json:"startsAt,omitempty" doc:"When the show starts (shown in the event's time zone)"`
	DoorsAt   *time.Time `json:"doorsAt,omitempty" doc:"When doors open: at or before the start"`
	EndsAt    *time.Time `json:"endsAt,omitempty" doc:"When it ends: after the start"`
	OffSaleAt *time.Time `json:"offSaleAt,omitempty" doc:"When the sale ends: after onSaleAt; reservations then get 409 SALE_CLOSED"`
}

// orderCalendar serves GET /v1/orders/{id}/calendar.ics.
func (s *Server) orderCalendar(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*download, error) {
	who := caller(ctx)
	ics, err := s.Checkout.Calendar(ctx, who.TenantID, in.ID, who.BuyerID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return attachment("text/calendar; charset=utf-8", "order-"+in.ID.String()+".ics", ics), nil
}

// orderTickets serves GET /v1/orders/{id}/tickets.pdf.
func (s *Server) orderTickets(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*download, error) {
	who := caller(ctx)
	pdf, err := s.Checkout.TicketsPDF(ctx, who.TenantID, in.ID, who.BuyerID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return attachment("application/pdf", "tickets-"+in.ID.String()+".pdf", pdf), nil
}

// download is a file the browser saves under its name.
type download struct {
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition"`
	Body               []byte
}

// attachment is body as a download named name (a name made of ids and
// fixed words: nothing to quote).
func attachment(contentType, name string, body []byte) *download {
	return &download{contentType, `attachment; filename="` + name + `"`, body}
}
