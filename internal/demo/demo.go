// Package demo holds what `boxoffice dev` seeds that is more than a few
// lines: the demo stadium's seat plan. The store's browser tests draw it
// too, so the brochure is tested as shoppers see it.
package demo

import (
	"fmt"
	"math"

	"boxoffice/internal/product"
)

// Stadium is the demo's seat plan, drawn as a stadium would be: the
// stage at the top, a floor of straight rows before it, and two tiers of
// curved rows around them, each tier its own price.
func Stadium() *product.Layout {
	const spacing = 1.1 // between seats along a row, in plan units
	floor := product.Section{Name: "Floor", PriceLevel: "Floor"}
	for r := range 8 {
		floor.Rows = append(floor.Rows, product.Row{Name: string(rune('A' + r)), Seats: 20, X: -10.5, Y: 4 + float64(r)*1.2})
	}
	// A tier's rows are arcs around the stage (the origin), from one side
	// to the other: the further back, the more seats.
	tier := func(name string, rows int, radius, from, to float64) product.Section {
		s := product.Section{Name: name, PriceLevel: name}
		for r := range rows {
			radius := radius + float64(r)*1.3
			n := int((to - from) * radius / spacing)
			row := product.Row{Name: fmt.Sprint(r + 1), Seats: n}
			for i := range n {
				a := from + (to-from)*(float64(i)+0.5)/float64(n)
				row.SeatList = append(row.SeatList, product.Seat{Label: fmt.Sprint(i + 1),
					X: math.Round(-radius*math.Cos(a)*100) / 100, Y: math.Round(radius*math.Sin(a)*100) / 100})
			}
			s.Rows = append(s.Rows, row)
		}
		return s
	}
	return &product.Layout{
		Sections: []product.Section{floor, tier("Lower", 6, 17, 0.55, math.Pi-0.55), tier("Upper", 6, 26, 0.3, math.Pi-0.3)},
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
