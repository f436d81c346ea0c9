// Package demo holds what `boxoffice dev` seeds that is more than a few
// lines: the demo stadium's and concert hall's seat plans and the posters. The store's browser tests draw it
// too, so the brochure is tested as shoppers see it.
package demo

import (
	"fmt"
	"math"

	"boxoffice/internal/product"
)

// Stadium is the demo's seat plan, drawn as a stadium would be: the
// stage at the top, a floor of straight rows before it, and two tiers of
// curved rows around them, cut by aisles into wedge-shaped sections (Lower
// 101–105, Upper 201–207), each tier its own price: about 3,000 seats.
func Stadium() *product.Layout {
	const spacing = 1.1 // between seats along a row, in plan units
	floor := product.Section{Name: "Floor", PriceLevel: "Floor"}
	for r := range 16 {
		floor.Rows = append(floor.Rows, product.Row{Name: string(rune('A' + r)), Seats: 30, X: -15.95, Y: 4 + float64(r)*1.1})
	}
	// A tier is rows on arcs around the stage (the origin), from one side
	// to the other, split into wedges with an aisle between each two: the
	// further back a row, the more seats it has.
	tier := func(name string, first, wedges, rows int, radius, from, to float64) []product.Section {
		const aisle = 0.05 // radians
		width := (to - from - aisle*float64(wedges-1)) / float64(wedges)
		var out []product.Section
		for w := range wedges {
			s := product.Section{Name: fmt.Sprintf("%s %d", name, first+w), PriceLevel: name}
			start := from + float64(w)*(width+aisle)
			for r := range rows {
				radius := radius + float64(r)*1.3
				n := int(width * radius / spacing)
				row := product.Row{Name: fmt.Sprint(r + 1), Seats: n}
				for i := range n {
					a := start + width*(float64(i)+0.5)/float64(n)
					row.SeatList = append(row.SeatList, product.Seat{Label: fmt.Sprint(i + 1),
						X: math.Round(-radius*math.Cos(a)*100) / 100, Y: math.Round(radius*math.Sin(a)*100) / 100})
				}
				s.Rows = append(s.Rows, row)
			}
			out = append(out, s)
		}
		return out
	}
	sections := append([]product.Section{floor}, tier("Lower", 101, 5, 12, 28, 0.25, math.Pi-0.25)...)
	return &product.Layout{
		Sections: append(sections, tier("Upper", 201, 7, 12, 46, 0.15, math.Pi-0.15)...),
		PriceLevels: []product.PriceLevel{{Name: "Floor", PriceCents: 12000}, {Name: "Lower", PriceCents: 8900},
			{Name: "Upper", PriceCents: 4900}},
	}
}

// Hall is the demo's concert hall: the stage at the top, twelve straight
// rows of stalls (the first six dearer) and a curved balcony behind them.
func Hall() *product.Layout {
	stalls := product.Section{Name: "Stalls"}
	for r := range 12 {
		level := "Premium"
		if r >= 6 {
			level = "Stalls"
		}
		seats := 22 + r/2*2 // the room widens towards the back
		stalls.Rows = append(stalls.Rows, product.Row{Name: string(rune('A' + r)), Seats: seats, PriceLevel: level,
			X: -float64(seats-1) * 0.55, Y: 4 + float64(r)*1.2})
	}
	balcony := product.Section{Name: "Balcony", PriceLevel: "Balcony"}
	for r := range 5 {
		radius := 24 + float64(r)*1.3
		n := int(1.34 * radius / 1.1)
		row := product.Row{Name: fmt.Sprint(r + 1), Seats: n}
		for i := range n {
			a := 0.9 + 1.34*(float64(i)+0.5)/float64(n)
			row.SeatList = append(row.SeatList, product.Seat{Label: fmt.Sprint(i + 1),
				X: math.Round(-radius*math.Cos(a)*100) / 100, Y: math.Round((radius*math.Sin(a)+4)*100) / 100})
		}
		balcony.Rows = append(balcony.Rows, row)
	}
	return &product.Layout{
		Sections: []product.Section{stalls, balcony},
		PriceLevels: []product.PriceLevel{{Name: "Premium", PriceCents: 6500}, {Name: "Stalls", PriceCents: 4500},
			{Name: "Balcony", PriceCents: 2800}},
	}
}
