package mail_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	mailer "boxoffice/internal/mail"
)

// A subject quoting a hostile product name cannot add headers or a body:
// the message keeps exactly the headers the sender wrote.
func TestSubjectCannotInjectHeaders(t *testing.T) {
	t.Parallel()
	sink, err := mailer.NewSink("127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	s := &mailer.Sender{Addr: sink.Addr(), From: "tickets@boxoffice.local"}

	evil := "Gala\r\nBcc: victim@example.com\r\nContent-Type: text/html\r\n\r\n<a href=http://evil>pay again</a>"
	require.NoError(t, s.Send("buyer@example.com", "Your tickets: "+evil, "codes"))
	require.Eventually(t, func() bool { return len(sink.Messages()) == 1 }, 5*time.Second, 10*time.Millisecond)

	m := sink.Messages()[0]
	msg, err := mail.ReadMessage(bufio.NewReader(strings.NewReader(m.Data)))
	require.NoError(t, err)
	require.Empty(t, msg.Header.Get("Bcc"))
	require.Equal(t, "text/plain; charset=utf-8", strings.ToLower(msg.Header.Get("Content-Type")))
	body, err := io.ReadAll(msg.Body)
	require.NoError(t, err)
	require.NotContains(t, string(body), "evil")
	require.Equal(t, "Your tickets: "+evil, m.Subject(), "the subject arrives whole, encoded")

	require.Error(t, s.Send("a@example.com\r\nBcc: b@example.com", "x", "y"))
}

// A relay that wants a login over STARTTLS, as SES, Postmark and SendGrid
// do: the sender logs in after upgrading the connection and the mail goes;
// a wrong password, or a sender that will not use TLS, gets nothing
// through; a sender that insists on TLS refuses a server without it.
func TestRelayWithLoginOverSTARTTLS(t *testing.T) {
	t.Parallel()
	server, roots := selfSigned(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	relay, err := mailer.NewSinkWith("127.0.0.1:0", logger, mailer.SinkOptions{TLS: server, Username: "apikey", Password: "s3cret"})
	require.NoError(t, err)
	t.Cleanup(relay.Close)

	good := &mailer.Sender{Addr: relay.Addr(), From: "tickets@boxoffice.local", Username: "apikey", Password: "s3cret",
		TLS: mailer.TLSStartTLS, TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	require.NoError(t, good.Send("buyer@example.com", "Your tickets · Gala", "Row A · Seat 7"))
	require.Len(t, relay.Messages(), 1)
	m := relay.Messages()[0]
	require.Equal(t, "buyer@example.com", m.To)
	require.Equal(t, "Your tickets · Gala", m.Subject())
	require.Contains(t, m.Data, "Row A · Seat 7", "8bit text, readable as written")

	wrong := *good
	wrong.Password = "guess"
	require.Error(t, wrong.Send("buyer@example.com", "x", "y"), "a wrong password")
	plain := *good
	plain.TLS = mailer.TLSNone
	require.Error(t, plain.Send("buyer@example.com", "x", "y"), "no login offered without TLS")
	require.Len(t, relay.Messages(), 1, "nothing else got through")

	open, err := mailer.NewSink("127.0.0.1:0", logger)
	require.NoError(t, err)
	t.Cleanup(open.Close)
	insist := &mailer.Sender{Addr: open.Addr(), From: "tickets@boxoffice.local", TLS: mailer.TLSStartTLS}
	require.Error(t, insist.Send("buyer@example.com", "x", "y"), "starttls insists")
	require.Empty(t, open.Messages())
}

// A server that does not offer 8BITMIME (Mailpit does not) gets the
// letter quoted-printable, which reads the same once decoded.
func TestServerWithout8BitMIME(t *testing.T) {
	t.Parallel()
	sink, err := mailer.NewSinkWith("127.0.0.1:0", slog.New(slog.DiscardHandler), mailer.SinkOptions{No8BitMIME: true})
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	s := &mailer.Sender{Addr: sink.Addr(), From: "tickets@boxoffice.local"}
	require.NoError(t, s.SendLetter(mailer.Letter{To: "buyer@example.com", Subject: "Your tickets · Gala",
		Text: "Row A · Seat 7", HTML: "<p>Row A · Seat 7</p>"}))
	require.Len(t, sink.Messages(), 1)
	m := sink.Messages()[0]
	require.Contains(t, m.Data, "Content-Transfer-Encoding: quoted-printable")
	require.NotContains(t, m.Data, "·", "no 8bit byte on the wire")
	parts, err := m.Parts()
	require.NoError(t, err)
	require.Contains(t, parts.Text, "Row A · Seat 7")
	require.Contains(t, parts.HTML, "Row A · Seat 7")
}

// selfSigned makes a certificate for 127.0.0.1 and the pool that trusts it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail sink"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, roots
}

// The dev inbox reads as JSON for tests and scripts.
func TestInboxAsJSON(t *testing.T) {
	t.Parallel()
	sink, err := mailer.NewSink("127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	s := &mailer.Sender{Addr: sink.Addr(), From: "tickets@boxoffice.local"}
	require.NoError(t, s.Send("buyer@example.com", "Bilhetes · Coliseu", "Fila A"))
	rec := httptest.NewRecorder()
	sink.Inbox().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/messages", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var got struct {
		Messages []struct{ To, Subject, Data string }
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Len(t, got.Messages, 1)
	require.Equal(t, "buyer@example.com", got.Messages[0].To)
	require.Equal(t, "Bilhetes · Coliseu", got.Messages[0].Subject)
	require.Contains(t, got.Messages[0].Data, "Fila A")
}

// A letter arrives as a mail client shows it: the tenant's name on the
// platform's address, answers going to the tenant, an HTML body with its
// text twin, and the attachments — through the inbox's JSON and pages too.
func TestALetterWithHTMLAndAttachments(t *testing.T) {
	t.Parallel()
	sink, err := mailer.NewSink("127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	s := &mailer.Sender{Addr: sink.Addr(), From: "tickets@boxoffice.local"}
	pdf := []byte("%PDF-1.3 not really\x00\x01")
	require.NoError(t, s.Deliver("order-1", mailer.Letter{To: "buyer@example.com", Subject: "Os seus bilhetes",
		Text: "Fila A · Lugar 7", HTML: "<p>Fila A · Lugar 7</p>", FromName: "Teatro \"Aurora\"\r\nBcc: x@example.com",
		ReplyTo: "bilheteira@aurora.example", Attachments: []mailer.Attachment{{Name: "tickets.pdf", ContentType: "application/pdf", Data: pdf}}}))
	m := sink.Messages()[0]
	require.Contains(t, m.Header("From"), "Aurora", "the display name")
	require.Contains(t, m.Header("From"), "<tickets@boxoffice.local>")
	require.Empty(t, m.Header("Bcc"), "a line break in the name makes no header")
	require.Equal(t, "<bilheteira@aurora.example>", m.Header("Reply-To"))
	p, err := m.Parts()
	require.NoError(t, err)
	require.Equal(t, "Fila A · Lugar 7", p.Text)
	require.Equal(t, "<p>Fila A · Lugar 7</p>", p.HTML)
	require.Len(t, p.Attachments, 1)
	require.Equal(t, pdf, p.Attachments[0].Data)

	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		sink.Inbox().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	var got struct {
		Messages []struct {
			Text, HTML  string
			Attachments []struct{ Name, ContentType string }
		}
	}
	require.NoError(t, json.Unmarshal(get("/api/messages").Body.Bytes(), &got))
	require.Equal(t, "Fila A · Lugar 7", got.Messages[0].Text)
	require.Equal(t, "tickets.pdf", got.Messages[0].Attachments[0].Name)
	html := get("/messages/0/html")
	require.Equal(t, "<p>Fila A · Lugar 7</p>", html.Body.String())
	require.Contains(t, html.Header().Get("Content-Security-Policy"), "sandbox")
	file := get("/messages/0/attachments/0")
	require.Equal(t, "application/pdf", file.Header().Get("Content-Type"))
	require.Equal(t, pdf, file.Body.Bytes())
	require.Equal(t, http.StatusNotFound, get("/messages/1/html").Code)
	require.Contains(t, get("/").Body.String(), `href="/messages/0/html"`)
}
