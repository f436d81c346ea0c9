package mail

import (
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
)

// Parts is a caught message taken apart: its text and HTML bodies,
// decoded, and its attachments.
type Parts struct {
	Text        string       `json:"text"`
	HTML        string       `json:"html,omitempty"`
	Attachments []Attachment `json:"attachments"`
}

// Parts decodes the message's MIME structure (multipart/mixed around a
// multipart/alternative, as Sender writes it, or a single part).
func (m Message) Parts() (Parts, error) {
	msg, err := mail.ReadMessage(strings.NewReader(m.Data))
	if err != nil {
		return Parts{}, fmt.Errorf("read message: %w", err)
	}
	p := Parts{Attachments: []Attachment{}}
	err = p.walk(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"),
		msg.Header.Get("Content-Disposition"), msg.Body)
	return p, err
}

func (p *Parts) walk(contentType, encoding, disposition string, body io.Reader) error {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType = "text/plain"
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		r := multipart.NewReader(body, params["boundary"])
		for {
			part, err := r.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read part: %w", err)
			}
			if err := p.walk(part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"),
				part.Header.Get("Content-Disposition"), part); err != nil {
				return err
			}
		}
	}
	data, err := decode(encoding, body)
	if err != nil {
		return err
	}
	disp, dparams, _ := mime.ParseMediaType(disposition)
	switch {
	case disp == "attachment" || disp == "inline" && !strings.HasPrefix(mediaType, "text/"):
		name := dparams["filename"]
		if name == "" {
			name = params["name"]
		}
		p.Attachments = append(p.Attachments, Attachment{Name: name, ContentType: mediaType, Data: data})
	case mediaType == "text/html":
		p.HTML = string(data)
	case mediaType == "text/plain" && p.Text == "":
		p.Text = string(data)
	}
	return nil
}

func decode(encoding string, r io.Reader) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r) // line breaks are skipped
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decode %s part: %w", encoding, err)
	}
	return data, nil
}
