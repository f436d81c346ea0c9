// Package letter writes what a tenant sends its buyers — e-mails and PDF
// tickets — in the tenant's name, colours, logo and language: one look for
// every message, an HTML body with its plain-text twin, dates in the
// venue's time zone and amounts as the language writes them.
package letter

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"boxoffice/internal/mail"
	"boxoffice/internal/product"
	"boxoffice/internal/tenant"
)

//go:embed words/*.json
var wordFiles embed.FS

// Languages are the languages letters are written in.
var Languages = []string{"en", "pt"}

// Words are one language's phrases, with {name} placeholders.
type Words struct {
	lang   string
	phrase map[string]string
}

// WordsFor returns the phrases of lang (English for any other).
func WordsFor(lang string) Words {
	data, err := wordFiles.ReadFile("words/" + lang + ".json")
	if err != nil {
		lang = "en"
		data, _ = wordFiles.ReadFile("words/en.json")
	}
	w := Words{lang: lang}
	if err := json.Unmarshal(data, &w.phrase); err != nil {
		panic(fmt.Sprintf("letter words %s: %v", lang, err)) // embedded at build time: a test reads each
	}
	return w
}

// Keys are the phrases' names.
func (w Words) Keys() []string { return slices.Sorted(maps.Keys(w.phrase)) }

// Lang is the words' language.
func (w Words) Lang() string { return w.lang }

// T is the phrase key with each {name} of pairs (name, value, ...) filled.
func (w Words) T(key string, pairs ...string) string {
	s, ok := w.phrase[key]
	if !ok {
		s = key
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		s = strings.ReplaceAll(s, "{"+pairs[i]+"}", pairs[i+1])
	}
	return s
}

// When writes a date for people in the venue's zone: "Saturday 12
// December 2026, 20:00 (doors 19:00), Europe/Lisbon".
func (w Words) When(d product.Dates, zone string) string {
	if d.StartsAt == nil {
		return w.T("toBeAnnounced")
	}
	loc := product.Location(zone)
	s := w.Date(*d.StartsAt, loc)
	if d.EndsAt != nil {
		s += "–" + d.EndsAt.In(loc).Format("15:04")
	}
	if d.DoorsAt != nil {
		s += " (" + w.T("doors", "time", d.DoorsAt.In(loc).Format("15:04")) + ")"
	}
	return s + ", " + zone
}

// Date writes one moment as the language writes a date and time.
func (w Words) Date(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	months, days := strings.Fields(w.T("months")), strings.Fields(w.T("weekdays"))
	return w.T("dateFormat", "weekday", days[t.Weekday()], "day", strconv.Itoa(t.Day()),
		"month", months[t.Month()-1], "year", strconv.Itoa(t.Year()), "time", t.Format("15:04"))
}

// symbols are the currency signs people know; other currencies show their
// code.
var symbols = map[string]string{"EUR": "€", "GBP": "£", "USD": "US$", "BRL": "R$"}

// Money writes an amount as the language does: €178.00 in English,
// 178,00 € in Portuguese.
func (w Words) Money(cents int64, currency string) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	units, rest := strconv.FormatInt(cents/100, 10), fmt.Sprintf("%02d", cents%100)
	sym, known := symbols[currency]
	if !known {
		sym = currency
	}
	if w.lang == "pt" {
		return sign + group(units, ".") + "," + rest + " " + sym
	}
	if known {
		return sign + sym + group(units, ",") + "." + rest
	}
	return sign + group(units, ",") + "." + rest + " " + sym
}

// group puts sep between each three digits from the right.
func group(digits, sep string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Brand is how a tenant's letters look and whom they come from.
type Brand struct {
	Name                      string
	Primary, Accent, Text, Bg string
	// LogoURL is an absolute URL of the logo a mail client can load, or
	// empty (the name is set in the brand's colour instead).
	LogoURL string
	// StoreURL is the store's address, for links back to it ("" if none).
	StoreURL string
	ReplyTo  string
	Words    Words
}

// BrandOf is the brand of a tenant's store profile.
func BrandOf(p *tenant.Profile) Brand {
	b := Brand{Name: p.Name, Primary: p.Colour("primary"), Accent: p.Colour("accent"), Text: p.Colour("text"), Bg: p.Colour("background"),
		ReplyTo: p.Theme["replyTo"], Words: WordsFor(p.Theme["language"])}
	if len(p.Domains) > 0 {
		scheme := "https://"
		if strings.Contains(p.Domains[0], ":") || strings.HasPrefix(p.Domains[0], "localhost") {
			scheme = "http://" // a development host
		}
		b.StoreURL = scheme + p.Domains[0] + "/"
	}
	switch logo := p.Theme["logoUrl"]; {
	case strings.HasPrefix(logo, "https://"):
		b.LogoURL = logo
	case logo != "" && strings.HasPrefix(b.StoreURL, "https://"):
		b.LogoURL = b.StoreURL + logo // an upload, served by the store
	}
	return b
}

// Content is what one letter says, in the brand's words already.
type Content struct {
	Subject string
	Heading string
	Intro   []string
	// Facts are labelled lines: when, where, order.
	Facts []Fact
	// Lines are the order summary (seat and price), Total its last line.
	Lines []Fact
	Total *Fact
	// Codes is a block of monospaced lines (login code, ticket codes).
	CodesIntro string
	Codes      []string
	// Button links back to the store.
	Button *Link
	// Attachments go with the letter (PDF tickets, the calendar entry).
	Attachments []mail.Attachment
}

// Fact is a label and its value.
type Fact struct{ Label, Value string }

// Link is a call to action.
type Link struct{ Text, URL string }

// Compose writes c as a letter to to, from the brand.
func (b Brand) Compose(to string, c Content) (mail.Letter, error) {
	var html bytes.Buffer
	if err := page.Execute(&html, map[string]any{"B": b, "C": c, "Footer": b.Words.T("footer", "store", b.Name)}); err != nil {
		return mail.Letter{}, fmt.Errorf("letter %q: %w", c.Subject, err)
	}
	return mail.Letter{To: to, Subject: c.Subject, Text: b.text(c), HTML: html.String(), FromName: b.Name,
		ReplyTo: b.ReplyTo, Attachments: c.Attachments}, nil
}

// text is the plain-text twin of the HTML.
func (b Brand) text(c Content) string {
	var s strings.Builder
	s.WriteString(c.Heading + "\n\n")
	for _, p := range c.Intro {
		s.WriteString(p + "\n\n")
	}
	width := 0
	all := append(append([]Fact{}, c.Facts...), c.Lines...)
	if c.Total != nil {
		all = append(all, *c.Total)
	}
	for _, f := range all {
		width = max(width, len([]rune(f.Label)))
	}
	line := func(f Fact) {
		fmt.Fprintf(&s, "%s%s  %s\n", f.Label, strings.Repeat(" ", width-len([]rune(f.Label))), f.Value)
	}
	for _, f := range c.Facts {
		line(f)
	}
	if len(c.Lines) > 0 {
		s.WriteString("\n")
		for _, f := range c.Lines {
			line(f)
		}
		if c.Total != nil {
			line(*c.Total)
		}
	}
	if len(c.Codes) > 0 {
		s.WriteString("\n")
		if c.CodesIntro != "" {
			s.WriteString(c.CodesIntro + "\n")
		}
		for _, code := range c.Codes {
			s.WriteString("  " + code + "\n")
		}
	}
	if c.Button != nil {
		fmt.Fprintf(&s, "\n%s: %s\n", c.Button.Text, c.Button.URL)
	}
	s.WriteString("\n-- \n" + b.Words.T("footer", "store", b.Name) + "\n")
	return s.String()
}

// page is the HTML letter: tables and inline styles, which is what mail
// clients render alike; one column at most 600 px wide.
var page = template.Must(template.New("letter").Parse(`<!doctype html>
<html lang="{{.B.Words.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.C.Subject}}</title></head>
<body style="margin:0;padding:0;background:#f3f3f5;color:{{.B.Text}};font-family:Helvetica,Arial,sans-serif;line-height:1.5">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f3f3f5"><tr><td align="center" style="padding:24px 12px">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="max-width:600px;background:{{.B.Bg}};border-radius:10px;overflow:hidden">
<tr><td style="background:{{.B.Primary}};padding:18px 24px">{{if .B.LogoURL}}<img src="{{.B.LogoURL}}" alt="{{.B.Name}}" height="36" style="display:block;height:36px">{{else}}<span style="color:#ffffff;font-size:20px;font-weight:bold">{{.B.Name}}</span>{{end}}</td></tr>
<tr><td style="padding:24px">
<h1 style="margin:0 0 12px;font-size:22px;color:{{.B.Text}}">{{.C.Heading}}</h1>
{{range .C.Intro}}<p style="margin:0 0 12px">{{.}}</p>
{{end}}{{if .C.Facts}}<table role="presentation" cellpadding="0" cellspacing="0" style="margin:12px 0;border-left:4px solid {{.B.Accent}}">
{{range .C.Facts}}<tr><th align="left" valign="top" style="padding:3px 12px;white-space:nowrap">{{.Label}}</th><td style="padding:3px 12px 3px 0">{{.Value}}</td></tr>
{{end}}</table>
{{end}}{{if .C.Lines}}<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="margin:16px 0;border-collapse:collapse">
{{range .C.Lines}}<tr><td style="padding:6px 0;border-bottom:1px solid #e2e2e6">{{.Label}}</td><td align="right" style="padding:6px 0;border-bottom:1px solid #e2e2e6;white-space:nowrap">{{.Value}}</td></tr>
{{end}}{{with .C.Total}}<tr><td style="padding:8px 0;font-weight:bold">{{.Label}}</td><td align="right" style="padding:8px 0;font-weight:bold;white-space:nowrap">{{.Value}}</td></tr>
{{end}}</table>
{{end}}{{if .C.Codes}}{{with .C.CodesIntro}}<p style="margin:12px 0 6px">{{.}}</p>{{end}}
{{range .C.Codes}}<p style="margin:4px 0;font-family:Menlo,Consolas,monospace;font-size:15px;letter-spacing:1px;word-break:break-all">{{.}}</p>
{{end}}{{end}}{{with .C.Button}}<p style="margin:20px 0 4px"><a href="{{.URL}}" style="display:inline-block;background:{{$.B.Primary}};color:#ffffff;text-decoration:none;font-weight:bold;padding:12px 20px;border-radius:6px">{{.Text}}</a></p>
{{end}}</td></tr>
<tr><td style="padding:14px 24px;background:#fafafa;color:#555;font-size:13px">{{.Footer}}</td></tr>
</table></td></tr></table>
</body></html>
`))
