package demo

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
)

// Poster draws an event's picture for the demo, in flat shapes (small as
// a PNG): "stadium" (a pitch ringed by stands), "hall" (a stage with
// curtains before rows of seats) or "raffle" (a ticket with a number).
// Drawn when the demo is seeded, so nothing is downloaded.
func Poster(kind string, primary, accent color.RGBA) ([]byte, error) {
	const w, h = 640, 360
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill := func(c color.RGBA, in func(x, y float64) bool) {
		for y := range h {
			for x := range w {
				if in(float64(x), float64(y)) {
					img.SetRGBA(x, y, c)
				}
			}
		}
	}
	dark := shade(primary, 0.45)
	fill(dark, func(float64, float64) bool { return true })
	switch kind {
	case "stadium":
		ellipse := func(rx, ry float64) func(x, y float64) bool {
			return func(x, y float64) bool { return sq((x-w/2)/rx)+sq((y-h/2)/ry) <= 1 }
		}
		fill(primary, ellipse(300, 165))
		fill(shade(primary, 0.75), ellipse(250, 130))
		fill(color.RGBA{46, 139, 87, 255}, ellipse(200, 95))
		fill(color.RGBA{60, 160, 100, 255}, func(x, y float64) bool {
			return ellipse(200, 95)(x, y) && int((x-w/2+200)/40)%2 == 0
		})
		white := color.RGBA{240, 240, 240, 255}
		fill(white, func(x, y float64) bool { return math.Abs(x-w/2) < 1.5 && ellipse(200, 95)(x, y) })
		fill(white, func(x, y float64) bool {
			d := math.Hypot(x-w/2, y-h/2)
			return d > 34 && d < 37
		})
		for i := range 8 { // floodlights
			a := float64(i) * math.Pi / 4
			cx, cy := w/2+310*math.Cos(a), h/2+172*math.Sin(a)
			fill(accent, func(x, y float64) bool { return math.Hypot(x-cx, y-cy) < 7 })
		}
	case "hall":
		fill(shade(accent, 0.6), func(x, y float64) bool { return y < 150 && (x < 150 || x > w-150) })
		fill(accent, func(x, y float64) bool { return y < 150 && (x < 130 || x > w-130) })
		fill(color.RGBA{250, 220, 150, 255}, func(x, y float64) bool { return y > 120 && y < 150 && x > 150 && x < w-150 })
		for r := range 6 {
			top := 175 + float64(r)*30
			fill(primary, func(x, y float64) bool {
				return y > top && y < top+18 && x > 60+float64(r)*-8 && x < w-60+float64(r)*8 &&
					math.Mod(x-40, 28) < 22
			})
		}
	case "raffle":
		fill(accent, func(x, y float64) bool {
			in := x > 110 && x < w-110 && y > 80 && y < h-80
			notch := math.Hypot(x-110, y-h/2) < 28 || math.Hypot(x-(w-110), y-h/2) < 28
			return in && !notch
		})
		fill(shade(accent, 0.8), func(x, y float64) bool { return math.Abs(x-(w-200)) < 2 && y > 90 && y < h-90 && int(y/8)%2 == 0 })
		for i, d := range []int{7, 7, 7} {
			digit(fill, primary, 170+float64(i)*80, 120, d)
		}
	default:
		return nil, fmt.Errorf("demo poster %q: stadium, hall or raffle", kind)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("demo poster: %w", err)
	}
	return b.Bytes(), nil
}

// digit draws a seven-segment digit 60×120 with its top left at (x0, y0).
func digit(fill func(color.RGBA, func(x, y float64) bool), c color.RGBA, x0, y0 float64, d int) {
	segments := map[int]string{7: "abc", 1: "bc", 0: "abcdef"}[d]
	box := map[rune][4]float64{'a': {0, 0, 60, 12}, 'b': {48, 0, 60, 60}, 'c': {48, 60, 60, 120}, 'd': {0, 108, 60, 120},
		'e': {0, 60, 12, 120}, 'f': {0, 0, 12, 60}, 'g': {0, 54, 60, 66}}
	for _, s := range segments {
		r := box[s]
		fill(c, func(x, y float64) bool { return x >= x0+r[0] && x < x0+r[2] && y >= y0+r[1] && y < y0+r[3] })
	}
}

func sq(v float64) float64 { return v * v }

// shade darkens c to f of its brightness.
func shade(c color.RGBA, f float64) color.RGBA {
	return color.RGBA{uint8(float64(c.R) * f), uint8(float64(c.G) * f), uint8(float64(c.B) * f), 255}
}
