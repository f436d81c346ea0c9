package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/reservation"
)

// encodingJSON is a view as huma's JSON format writes it, and a newline.
func encodingJSON(t testing.TB, v *ReservationView) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return buf.String()
}

// TestReservationViewJSON: the fast route's encoding of a view is
// encoding/json's, byte for byte — a view with every field set (so a field
// added to the struct and not to appendJSON fails here), the fields left
// out when empty, and strings that need escaping.
func TestReservationViewJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 6, 18, 30, 5, 123456789, time.FixedZone("", -3*3600))
	later := at.Add(10 * time.Minute).UTC()
	hold := uuid.New()
	full := &ReservationView{
		Request: &reservation.Request{ID: uuid.New(), ProductID: uuid.New(), Status: "HELD", Reason: "why \"not\"",
			HoldID: &hold, Numbers: []int32{7, -1, 2147483647}, ExpiresAt: &later, CreatedAt: at, ProcessedAt: &later},
		Seats: []string{"North · Row A · Seat 7", `<b>&amp;</b>`, "tab\tnew\nline\x01\x1f\u2028\u2029\\", "bad \xff utf-8 \xe2\x82"},
		Quote: &QuoteView{Lines: []QuoteLine{{Number: 7, Seat: "A7", PriceCents: 4500}, {Number: 8, Seat: "é", PriceCents: -1}},
			FeeCents: 150, FeesCents: 300, TotalCents: 9300, Currency: "BRL"},
		StatusURL: "/v1/reservations/x",
	}
	// Every field of the view and of what it embeds is set above.
	for _, val := range []reflect.Value{reflect.ValueOf(*full), reflect.ValueOf(*full.Request),
		reflect.ValueOf(*full.Quote), reflect.ValueOf(full.Quote.Lines[0])} {
		for i := range val.NumField() {
			require.False(t, val.Field(i).IsZero(), "%s.%s is set in the full view", val.Type().Name(), val.Type().Field(i).Name)
		}
	}
	views := map[string]*ReservationView{
		"full":          full,
		"queued":        {Request: &reservation.Request{ID: uuid.New(), ProductID: uuid.New(), Status: "QUEUED", CreatedAt: at}, StatusURL: "/v1/reservations/y"},
		"no request":    {StatusURL: "/v1/reservations/z"},
		"quote no line": {Request: full.Request, Quote: &QuoteView{Currency: "EUR"}},
		"empty lists":   {Request: &reservation.Request{Numbers: []int32{}}, Seats: []string{}, Quote: &QuoteView{Lines: []QuoteLine{}}},
	}
	for name, v := range views {
		require.Equal(t, encodingJSON(t, v), string(v.appendJSON(nil))+"\n", name)
	}
}

// FuzzReservationViewJSON: any strings and numbers encode as encoding/json
// encodes them.
func FuzzReservationViewJSON(f *testing.F) {
	f.Add("HELD", "North · Row A", "BRL", int32(7), int64(4500), int64(1_700_000_000_123))
	f.Add("\u2028\"\\\x00", "\xff\xfe", "<&>", int32(-3), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, status, seat, currency string, n int32, cents, ns int64) {
		at := time.Unix(0, ns).UTC()
		v := &ReservationView{Request: &reservation.Request{Status: status, Reason: seat, Numbers: []int32{n}, CreatedAt: at},
			Seats: []string{seat}, Quote: &QuoteView{Lines: []QuoteLine{{Number: n, Seat: seat, PriceCents: cents}}, Currency: currency}}
		require.Equal(t, encodingJSON(t, v), string(v.appendJSON(nil))+"\n")
	})
}

func BenchmarkReservationViewJSON(b *testing.B) {
	now := time.Now()
	v := &ReservationView{Request: &reservation.Request{ID: uuid.New(), ProductID: uuid.New(), Status: "REJECTED", Reason: "SEAT_TAKEN",
		CreatedAt: now, ProcessedAt: &now}, StatusURL: "/v1/reservations/" + uuid.NewString()}
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			encodingJSON(b, v)
		}
	})
	b.Run("appendJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = v.appendJSON(buf[:0])
		}
	})
}
