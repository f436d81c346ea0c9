// Package qr draws QR codes as SVG, for tickets shown at the gate.
package qr

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// SVG encodes text as a QR code (medium error correction) drawn as one SVG
// path of unit squares, with the standard quiet zone; it scales to any size.
func SVG(text string) ([]byte, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("qr code: %w", err)
	}
	bits := q.Bitmap() // includes the quiet zone
	n := len(bits)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, n, n)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bits {
		for x, dark := range row {
			if dark {
				fmt.Fprintf(&b, "M%d %dh1v1h-1z", x, y)
			}
		}
	}
	b.WriteString(`"/></svg>`)
	return []byte(b.String()), nil
}

// PNG encodes text as a QR code image (medium error correction, with the
// quiet zone), each module scale pixels square, in 8-bit grey: sharp when
// printed and read by any scanner.
func PNG(text string, scale int) ([]byte, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("qr code: %w", err)
	}
	bits := q.Bitmap()
	n := len(bits) * scale
	img := image.NewGray(image.Rect(0, 0, n, n))
	for y := range n {
		for x := range n {
			c := color.Gray{Y: 255}
			if bits[y/scale][x/scale] {
				c.Y = 0
			}
			img.SetGray(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("qr png: %w", err)
	}
	return b.Bytes(), nil
}
