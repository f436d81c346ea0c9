package product

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Caps on a seat map. A stadium has about 100,000 seats; each seat costs
// memory and bytes in every plan served, so one tenant's map must not be
// able to exhaust the process that serves everyone's.
const (
	MaxSeats = 200_000 // seats of one seated product
	MaxRows  = 20_000  // rows of one seat map, all sections together
)

// Layout maps the sections and rows of a seated venue onto seat numbers,
// with where each seat is on the venue plan and its price level.
//
// Numbers are assigned in the order given: the first row of the first
// section holds numbers 1..seats, the next row continues from there. The
// order is also the order of preference for best-available picks, so list
// the best sections and rows first. The seats of a row are side by side in
// the order listed (best-available keeps a party together within a row):
// an aisle splits a row into two.
//
// Positions are in plan units with y growing downwards (as on a page): a
// section's X, Y place it; a row's X, Y are relative to its section and
// place its first seat; without a seat list a row's seats are one unit
// apart along x. A seat's level comes from the seat, else its row, else
// its section; without one it sells at the product's price.
type Layout struct {
	Sections    []Section    `json:"sections" minItems:"1" maxItems:"1000"`
	PriceLevels []PriceLevel `json:"priceLevels,omitempty" maxItems:"100" doc:"Prices of the levels seats name; seats without a level sell at the product's price"`
}

// PriceLevel is a named price.
type PriceLevel struct {
	Name       string `json:"name" minLength:"1" maxLength:"64" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	PriceCents int64  `json:"priceCents" minimum:"0" maximum:"100000000"`
}

// Section is a named block of rows.
type Section struct {
	Name       string  `json:"name" minLength:"1" maxLength:"64" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	X          float64 `json:"x,omitempty"`
	Y          float64 `json:"y,omitempty"`
	PriceLevel string  `json:"priceLevel,omitempty" maxLength:"64"`
	Rows       []Row   `json:"rows" minItems:"1" maxItems:"10000"`
}

// Row is a named row of seats. First and Last are the seat numbers it covers,
// filled in by the server.
type Row struct {
	Name       string  `json:"name" minLength:"1" maxLength:"64" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	Seats      int     `json:"seats" minimum:"1" maximum:"100000"`
	X          float64 `json:"x,omitempty"`
	Y          float64 `json:"y,omitempty"`
	PriceLevel string  `json:"priceLevel,omitempty" maxLength:"64"`
	// SeatList, when given, names and places each seat (Seats of them);
	// otherwise seats are labelled 1..Seats.
	SeatList []Seat `json:"seatList,omitempty" maxItems:"100000"`
	First    int    `json:"first,omitempty" readOnly:"true"`
	Last     int    `json:"last,omitempty" readOnly:"true"`
}

// Seat is one seat of a row's seat list.
type Seat struct {
	Label      string  `json:"label" minLength:"1" maxLength:"32" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
	PriceLevel string  `json:"priceLevel,omitempty" maxLength:"64"`
}

// ErrLayoutCapacity is returned when a layout's seats do not add up to the
// product's capacity.
var ErrLayoutCapacity = errors.New("layout seats do not add up to capacity")

// ErrLayout is returned for a layout that is inconsistent in itself.
var ErrLayout = errors.New("invalid layout")

// Number assigns First/Last to every row, lays out the sections whose rows
// carry no position (see place) and returns the total seat count.
func (l *Layout) Number() int {
	l.place()
	next := 1
	for si := range l.Sections {
		for ri := range l.Sections[si].Rows {
			row := &l.Sections[si].Rows[ri]
			row.First, row.Last = next, next+row.Seats-1
			next += row.Seats
		}
	}
	return next - 1
}

// sectionGap is the space, in plan units, place leaves between a section
// it lays out and what is above it.
const sectionGap = 2

// place lays out what a layout leaves unplaced, so that a plan given only
// as sections of rows with seat counts is drawn as rows, not as one line:
// in a section none of whose rows has a position or a seat list, each row
// goes one unit below the one before; such a section at the plan's origin
// goes below everything listed before it, sectionGap apart. Positions given
// are kept as they are.
func (l *Layout) place() {
	bottom, any := 0.0, false // the lowest seat so far
	for si := range l.Sections {
		s := &l.Sections[si]
		unplaced := true
		for _, r := range s.Rows {
			if r.X != 0 || r.Y != 0 || r.SeatList != nil {
				unplaced = false
				break
			}
		}
		if unplaced {
			if any && s.X == 0 && s.Y == 0 {
				s.Y = bottom + sectionGap
			}
			for ri := range s.Rows {
				s.Rows[ri].Y = float64(ri)
			}
		}
		for _, r := range s.Rows {
			y := s.Y + r.Y
			for _, st := range r.SeatList {
				y = max(y, s.Y+r.Y+st.Y)
			}
			if !any || y > bottom {
				bottom, any = y, true
			}
		}
	}
}

// Rows returns every row in preference order.
func (l *Layout) Rows() []Row {
	var rows []Row
	for _, s := range l.Sections {
		rows = append(rows, s.Rows...)
	}
	return rows
}

// Validate numbers the layout and checks it stays within MaxSeats and
// MaxRows, covers exactly capacity seats, that seat lists match their rows
// and that every level named has a price.
func (l *Layout) Validate(capacity int) error {
	seats, rows := 0, 0
	for _, s := range l.Sections {
		rows += len(s.Rows)
		for _, r := range s.Rows {
			seats += r.Seats
		}
	}
	if seats > MaxSeats || capacity > MaxSeats {
		return fmt.Errorf("%w: a seat map holds at most %d seats", ErrLayout, MaxSeats)
	}
	if rows > MaxRows {
		return fmt.Errorf("%w: a seat map holds at most %d rows", ErrLayout, MaxRows)
	}
	if total := l.Number(); total != capacity {
		return fmt.Errorf("%w: %d seats, capacity %d", ErrLayoutCapacity, total, capacity)
	}
	levels := map[string]bool{}
	for _, pl := range l.PriceLevels {
		if levels[pl.Name] {
			return fmt.Errorf("%w: price level %q twice", ErrLayout, pl.Name)
		}
		levels[pl.Name] = true
	}
	known := func(level, where string) error {
		if level != "" && !levels[level] {
			return fmt.Errorf("%w: %s names price level %q, which has no price", ErrLayout, where, level)
		}
		return nil
	}
	for _, s := range l.Sections {
		if err := known(s.PriceLevel, "section "+s.Name); err != nil {
			return err
		}
		for _, r := range s.Rows {
			where := "section " + s.Name + " row " + r.Name
			if err := known(r.PriceLevel, where); err != nil {
				return err
			}
			if r.SeatList != nil && len(r.SeatList) != r.Seats {
				return fmt.Errorf("%w: %s lists %d seats for %d", ErrLayout, where, len(r.SeatList), r.Seats)
			}
			for _, seat := range r.SeatList {
				if err := known(seat.PriceLevel, where+" seat "+seat.Label); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// PlacedSeat is one seat as a page draws it.
type PlacedSeat struct {
	Number     int     `json:"number" doc:"The number the seat is, in reservations, holds and tickets"`
	Label      string  `json:"label"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
	PriceLevel string  `json:"priceLevel,omitempty"`
}

// Seat returns the seat at index i (0-based) of row r in section s.
func (l *Layout) Seat(s *Section, r *Row, i int) PlacedSeat {
	p := PlacedSeat{Number: r.First + i, Label: strconv.Itoa(i + 1),
		X: s.X + r.X + float64(i), Y: s.Y + r.Y, PriceLevel: r.PriceLevel}
	if p.PriceLevel == "" {
		p.PriceLevel = s.PriceLevel
	}
	if i < len(r.SeatList) {
		st := r.SeatList[i]
		p.Label, p.X, p.Y = st.Label, s.X+r.X+st.X, s.Y+r.Y+st.Y
		if st.PriceLevel != "" {
			p.PriceLevel = st.PriceLevel
		}
	}
	return p
}

// Locate returns the section, row and seat of a number (ok false outside
// the layout). The layout must be numbered: rows then cover ascending runs
// of numbers, so two binary searches find the row.
func (l *Layout) Locate(number int) (s *Section, r *Row, seat PlacedSeat, ok bool) {
	si := sort.Search(len(l.Sections), func(i int) bool {
		rows := l.Sections[i].Rows
		return len(rows) > 0 && rows[len(rows)-1].Last >= number
	})
	if si == len(l.Sections) {
		return nil, nil, PlacedSeat{}, false
	}
	sec := &l.Sections[si]
	ri := sort.Search(len(sec.Rows), func(i int) bool { return sec.Rows[i].Last >= number })
	if ri == len(sec.Rows) || number < sec.Rows[ri].First {
		return nil, nil, PlacedSeat{}, false
	}
	row := &sec.Rows[ri]
	return sec, row, l.Seat(sec, row, number-row.First), true
}

// SeatWords are the words a seat's name is made of, in a store's language.
type SeatWords struct{ Row, Seat, Number string }

// SeatWordsIn are the seat words of a store language (en or pt; English
// for any other).
func SeatWordsIn(lang string) SeatWords {
	if lang == "pt" {
		return SeatWords{Row: "Fila", Seat: "Lugar", Number: "Número"}
	}
	return SeatWords{Row: "Row", Seat: "Seat", Number: "Number"}
}

// Label names a seat for people, in English: "North · Row A · Seat 7". A
// number outside the layout (or a numbered product's) is "Number 7".
func (l *Layout) Label(number int) string { return l.LabelIn(number, SeatWordsIn("en")) }

// LabelIn names a seat for people in a store's words: "North · Fila A ·
// Lugar 7".
func (l *Layout) LabelIn(number int, w SeatWords) string {
	if l != nil {
		if s, r, seat, ok := l.Locate(number); ok {
			return s.Name + " · " + w.Row + " " + r.Name + " · " + w.Seat + " " + seat.Label
		}
	}
	return w.Number + " " + strconv.Itoa(number)
}

// LabelsIn names several numbers' seats in a store's words.
func (l *Layout) LabelsIn(numbers []int32, w SeatWords) []string {
	out := make([]string, len(numbers))
	for i, n := range numbers {
		out[i] = l.LabelIn(int(n), w)
	}
	return out
}

// Price is what a number sells for: its level's price, else base.
func (l *Layout) Price(number int, base int64) int64 {
	if l == nil || len(l.PriceLevels) == 0 {
		return base
	}
	_, _, seat, ok := l.Locate(number)
	if !ok || seat.PriceLevel == "" {
		return base
	}
	for _, pl := range l.PriceLevels {
		if pl.Name == seat.PriceLevel {
			return pl.PriceCents
		}
	}
	return base
}

// CSV columns of a seat map, in this order, with a header row.
var csvColumns = []string{"section", "row", "seat", "x", "y", "price_level"}

// ParseCSV reads a seat map: a header row "section,row,seat,x,y,price_level"
// then one line per seat, in preference order (sections and rows in the order
// they first appear; a row's seats side by side in the order listed). x and
// y are absolute plan positions; price_level may be empty. Levels' prices
// are given separately.
func ParseCSV(r io.Reader, levels []PriceLevel) (*Layout, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(csvColumns)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: seat map header: %w", ErrLayout, err)
	}
	for i, h := range header {
		if strings.TrimSpace(strings.ToLower(h)) != csvColumns[i] {
			return nil, fmt.Errorf("%w: seat map header must be %s", ErrLayout, strings.Join(csvColumns, ","))
		}
	}
	l := &Layout{PriceLevels: levels}
	sections := map[string]int{}
	rows := map[[2]string]int{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if line-1 > MaxSeats {
			return nil, fmt.Errorf("%w: a seat map holds at most %d seats", ErrLayout, MaxSeats)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: seat map line %d: %w", ErrLayout, line, err)
		}
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		sec, row, label, level := rec[0], rec[1], rec[2], rec[5]
		if sec == "" || row == "" || label == "" {
			return nil, fmt.Errorf("%w: seat map line %d: section, row and seat are required", ErrLayout, line)
		}
		x, errX := strconv.ParseFloat(rec[3], 64)
		y, errY := strconv.ParseFloat(rec[4], 64)
		if errX != nil || errY != nil {
			return nil, fmt.Errorf("%w: seat map line %d: x and y must be numbers", ErrLayout, line)
		}
		si, ok := sections[sec]
		if !ok {
			si = len(l.Sections)
			sections[sec] = si
			l.Sections = append(l.Sections, Section{Name: sec})
		} else if si != len(l.Sections)-1 {
			return nil, fmt.Errorf("%w: seat map line %d: the rows of section %s must be listed together", ErrLayout, line, sec)
		}
		key := [2]string{sec, row}
		ri, ok := rows[key]
		if !ok {
			ri = len(l.Sections[si].Rows)
			rows[key] = ri
			l.Sections[si].Rows = append(l.Sections[si].Rows, Row{Name: row})
		} else if ri != len(l.Sections[si].Rows)-1 {
			return nil, fmt.Errorf("%w: seat map line %d: the seats of row %s/%s must be listed together", ErrLayout, line, sec, row)
		}
		rw := &l.Sections[si].Rows[ri]
		rw.SeatList = append(rw.SeatList, Seat{Label: label, X: x, Y: y, PriceLevel: level})
		rw.Seats++
	}
	if len(l.Sections) == 0 {
		return nil, fmt.Errorf("%w: the seat map lists no seats", ErrLayout)
	}
	return l, nil
}
