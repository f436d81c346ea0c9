// Package lettertest reads PDF tickets back as a person's tools would: the
// text with a PDF reader, each QR code with a barcode scanner library.
package lettertest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"
	"github.com/makiuchi-d/gozxing"
	gzqr "github.com/makiuchi-d/gozxing/qrcode"
)

// Page is one page of a PDF: its text and the QR codes read off it.
type Page struct {
	Text string
	QR   []string
}

// reference is a name's entry in a resource dictionary.
var reference = regexp.MustCompile(`/(\S+) (\d+) 0 R`)

// Read extracts each page's text and decodes the QR codes drawn on it.
func Read(data []byte) ([]Page, error) {
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("open pdf: %w", err)
	}
	images, names, err := grayImages(data)
	if err != nil {
		return nil, err
	}
	var pages []Page
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		var text strings.Builder
		rows, err := p.GetTextByRow()
		if err != nil {
			return nil, fmt.Errorf("text of page %d: %w", i, err)
		}
		for _, row := range rows {
			for _, w := range row.Content {
				text.WriteString(w.S)
			}
			text.WriteString("\n")
		}
		page := Page{Text: text.String()}
		// The images the page draws (its resources may list more: a
		// writer can share one dictionary among pages).
		content, err := io.ReadAll(p.V.Key("Contents").Reader())
		if err != nil {
			return nil, fmt.Errorf("content of page %d: %w", i, err)
		}
		for _, m := range drawn.FindAllSubmatch(content, -1) {
			img, ok := images[names[string(m[1])]]
			if !ok {
				continue
			}
			code, err := scan(img)
			if err != nil {
				return nil, fmt.Errorf("qr on page %d: %w", i, err)
			}
			page.QR = append(page.QR, code)
		}
		pages = append(pages, page)
	}
	return pages, nil
}

// drawn is a content stream's drawing of an XObject.
var drawn = regexp.MustCompile(`/(\S+) Do\b`)

// imageObject is a PDF image XObject holding a PNG's compressed data, as
// PDF writers embed a PNG (FlateDecode with PNG predictors).
var imageObject = regexp.MustCompile(`(?s)(?:^|\n)(\d+) 0 obj\s*<</Type /XObject\s*/Subtype /Image\s*/Width (\d+)\s*/Height (\d+)\s*/ColorSpace /DeviceGray\s*/BitsPerComponent 8\s*/Filter /FlateDecode.*?/Length (\d+)>>\s*stream\r?\n`)

// grayImages finds the 8-bit grey images of the file and decodes each by
// wrapping its stream in a PNG file again (the PDF reader does not undo
// PNG predictors), by object number; and the object each resource name
// refers to.
func grayImages(data []byte) (map[string]image.Image, map[string]string, error) {
	out := map[string]image.Image{}
	for _, m := range imageObject.FindAllSubmatchIndex(data, -1) {
		obj := string(data[m[2]:m[3]])
		w, _ := strconv.Atoi(string(data[m[4]:m[5]]))
		h, _ := strconv.Atoi(string(data[m[6]:m[7]]))
		n, _ := strconv.Atoi(string(data[m[8]:m[9]]))
		if m[1]+n > len(data) {
			return nil, nil, fmt.Errorf("image stream runs past the file")
		}
		img, err := png.Decode(bytes.NewReader(pngFile(w, h, data[m[1]:m[1]+n])))
		if err != nil {
			return nil, nil, fmt.Errorf("decode image %dx%d: %w", w, h, err)
		}
		out[obj] = img
	}
	names := map[string]string{}
	for _, m := range reference.FindAllSubmatch(data, -1) {
		names[string(m[1])] = string(m[2])
	}
	return out, names, nil
}

func pngFile(w, h int, idat []byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(kind string, body []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(body)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(kind))
		crc.Write(body)
		b.WriteString(kind)
		b.Write(body)
		_ = binary.Write(&b, binary.BigEndian, crc.Sum32())
	}
	head := make([]byte, 13)
	binary.BigEndian.PutUint32(head[0:], uint32(w))
	binary.BigEndian.PutUint32(head[4:], uint32(h))
	head[8], head[9] = 8, 0 // 8 bits, greyscale
	chunk("IHDR", head)
	chunk("IDAT", idat)
	chunk("IEND", nil)
	return b.Bytes()
}

// scan decodes the QR code of an image. The finder-pattern search now and
// then misjudges a code's size on these small, border-tight images
// ("dimension = 31"); the picture is a whole, upright code, so reading it as
// one (PURE_BARCODE) is the second try, as a phone's scanner tries again.
func scan(img image.Image) (string, error) {
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		return "", err
	}
	res, err := gzqr.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		var again error
		res, again = gzqr.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
		if again != nil {
			return "", err
		}
	}
	return res.GetText(), nil
}
