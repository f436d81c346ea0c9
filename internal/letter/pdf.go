package letter

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"codeberg.org/go-pdf/fpdf"

	"boxoffice/internal/qr"
)

// Ticket is one page of a PDF of tickets, its words already written.
type Ticket struct {
	Event, When, Where, Entry string
	Seat, Price               string
	Holder, Order             string
	Code                      string
}

// TicketsPDF renders one A4 page per ticket: the brand's band with its
// name, the event, when and where, the seat, the holder and a QR code of
// the ticket's code large enough to scan from a phone screen or paper.
// The PDF's standard fonts write Western European text (Windows-1252);
// anything else is replaced.
func (b Brand) TicketsPDF(tickets []Ticket, created time.Time) ([]byte, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetCreationDate(created)
	pdf.SetModificationDate(created)
	pdf.SetTitle(b.Words.T("ticketPDFTitle")+" · "+b.Name, true)
	pdf.SetAuthor(b.Name, true)
	pdf.SetCreator("BoxOffice", false)
	pdf.SetAutoPageBreak(false, 0)
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	pr, pg, pb := rgb(b.Primary)
	ar, ag, ab := rgb(b.Accent)
	for i, t := range tickets {
		pdf.AddPage()
		// The band: the tenant's colour and name.
		pdf.SetFillColor(pr, pg, pb)
		pdf.Rect(0, 0, 210, 28, "F")
		pdf.SetTextColor(255, 255, 255)
		pdf.SetFont("Helvetica", "B", 18)
		pdf.SetXY(15, 9)
		pdf.CellFormat(120, 10, tr(b.Name), "", 0, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 11)
		pdf.SetXY(135, 9)
		pdf.CellFormat(60, 10, tr(b.Words.T("ticketPDFTitle")+" "+strconv.Itoa(i+1)+"/"+strconv.Itoa(len(tickets))), "", 0, "R", false, 0, "")

		pdf.SetTextColor(29, 29, 31)
		pdf.SetXY(15, 40)
		pdf.SetFont("Helvetica", "B", 24)
		pdf.MultiCell(180, 10, tr(t.Event), "", "L", false)
		pdf.Ln(2)
		fact := func(label, value string) {
			if value == "" {
				return
			}
			pdf.SetX(15)
			pdf.SetFont("Helvetica", "B", 11)
			pdf.CellFormat(30, 7, tr(label), "", 0, "L", false, 0, "")
			pdf.SetFont("Helvetica", "", 11)
			pdf.MultiCell(150, 7, tr(value), "", "L", false)
		}
		w := b.Words
		fact(w.T("when"), t.When)
		fact(w.T("where"), t.Where)
		fact(w.T("entry"), t.Entry)

		// The seat, large, on the accent's rule.
		y := pdf.GetY() + 6
		pdf.SetFillColor(ar, ag, ab)
		pdf.Rect(15, y, 2, 20, "F")
		pdf.SetXY(21, y)
		pdf.SetFont("Helvetica", "", 10)
		pdf.CellFormat(150, 6, tr(w.T("seat")), "", 2, "L", false, 0, "")
		pdf.SetFont("Helvetica", "B", 20)
		pdf.CellFormat(170, 12, tr(t.Seat), "", 2, "L", false, 0, "")
		pdf.SetY(y + 26)
		fact(w.T("holder"), t.Holder)
		fact(w.T("order"), t.Order)
		fact(w.T("price"), t.Price)

		png, err := qr.PNG(t.Code, 8)
		if err != nil {
			return nil, err
		}
		name := "qr" + strconv.Itoa(i)
		pdf.RegisterImageOptionsReader(name, fpdf.ImageOptions{ImageType: "PNG"}, bytes.NewReader(png))
		top := max(pdf.GetY()+10, 150.0)
		pdf.ImageOptions(name, 55, top, 100, 100, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
		pdf.SetXY(15, top+102)
		pdf.SetFont("Courier", "", 8)
		pdf.MultiCell(180, 4, t.Code, "", "C", false)
		pdf.SetFont("Helvetica", "", 10)
		pdf.SetX(15)
		pdf.MultiCell(180, 6, tr(w.T("ticketPDFNote")), "", "C", false)
	}
	var out bytes.Buffer
	if err := pdf.Output(&out); err != nil {
		return nil, fmt.Errorf("tickets pdf: %w", err)
	}
	return out.Bytes(), nil
}

// rgb reads #rrggbb (validated when the theme is set).
func rgb(hex string) (r, g, b int) {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if len(hex) != 7 || err != nil {
		return 0, 0, 0
	}
	return int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)
}
