package product

import (
	"errors"
	"fmt"
)

// Layout maps the sections and rows of a seated venue onto seat numbers.
// Numbers are assigned in the order given: the first row of the first section
// holds numbers 1..seats, the next row continues from there. The order is also
// the order of preference for best-available picks, so list the best sections
// and rows first.
type Layout struct {
	Sections []Section `json:"sections" minItems:"1" maxItems:"1000"`
}

// Section is a named block of rows.
type Section struct {
	Name string `json:"name" minLength:"1" maxLength:"64" pattern:"^[^\\p{Cc}]+$" patternDescription:"no control characters"`
	Rows []Row  `json:"rows" minItems:"1" maxItems:"10000"`
}

// Row is a named row of seats. First and Last are the seat numbers it covers,
// filled in by the server.
type Row struct {
	Name  string `json:"name" minLength:"1" maxLength:"64" pattern:"^[^\\p{Cc}]+$" patternDescription:"no control characters"`
	Seats int    `json:"seats" minimum:"1" maximum:"100000"`
	First int    `json:"first,omitempty" readOnly:"true"`
	Last  int    `json:"last,omitempty" readOnly:"true"`
}

// ErrLayoutCapacity is returned when a layout's seats do not add up to the
// product's capacity.
var ErrLayoutCapacity = errors.New("layout seats do not add up to capacity")

// Number assigns First/Last to every row and returns the total seat count.
func (l *Layout) Number() int {
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

// Rows returns every row in preference order.
func (l *Layout) Rows() []Row {
	var rows []Row
	for _, s := range l.Sections {
		rows = append(rows, s.Rows...)
	}
	return rows
}

// Validate numbers the layout and checks it covers exactly capacity seats.
func (l *Layout) Validate(capacity int) error {
	if total := l.Number(); total != capacity {
		return fmt.Errorf("%w: %d seats, capacity %d", ErrLayoutCapacity, total, capacity)
	}
	return nil
}
