// Package mail sends e-mail over SMTP and, for development, catches it: a
// small SMTP server that keeps messages in memory with a web inbox.
package mail

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Sender sends mail through an SMTP server: a relay that wants
// a login (SES, Postmark, SendGrid) gets one, over TLS.
type Sender struct {
	Addr string // host:port
	From string
	// Username and Password log in to the relay (AUTH, the strongest
	// mechanism it offers); empty: no login.
	Username, Password string
	// TLS is how the connection is secured: TLSStartTLS (insist on
	// STARTTLS), TLSImplicit (TLS from the first byte, port 465),
	// TLSOpportunistic (STARTTLS when offered; the default) or TLSNone.
	TLS string
	// TLSConfig, when set, replaces the system's roots and settings (a
	// test's own certificate authority).
	TLSConfig *tls.Config
}

// How a Sender secures its connection.
const (
	TLSStartTLS      = "starttls"
	TLSImplicit      = "tls"
	TLSOpportunistic = "opportunistic"
	TLSNone          = "none"
)

// Letter is one message: a plain-text body, optionally an HTML
// alternative of it, and attachments.
type Letter struct {
	To, Subject string
	Text        string
	HTML        string // empty: text only
	// FromName is the display name on From (the tenant's name); the
	// address stays the Sender's, the one the relay is allowed to send as.
	FromName string
	// ReplyTo is where answers go (the tenant's contact), if set.
	ReplyTo     string
	Attachments []Attachment
}

// Attachment is a file sent with a letter.
type Attachment struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Data        []byte `json:"-"`
}

// Send delivers one plain-text message with a fresh Message-ID.
func (s *Sender) Send(to, subject, body string) error {
	return s.SendLetter(Letter{To: to, Subject: subject, Text: body})
}

// SendLetter delivers l with a fresh Message-ID (a message never sent
// again, such as a login code).
func (s *Sender) SendLetter(l Letter) error {
	var id [12]byte
	_, _ = rand.Read(id[:])
	return s.Deliver(hex.EncodeToString(id[:]), l)
}

// SendID delivers one plain-text message whose Message-ID is <id@domain>.
func (s *Sender) SendID(id, to, subject, body string) error {
	return s.Deliver(id, Letter{To: to, Subject: subject, Text: body})
}

// Deliver sends l with the Message-ID <id@sender's domain>. A message that
// may be sent again — tickets re-sent after a crash or a restore replays
// the outbox — keeps one id, so mail clients and the tenant's logs see the
// copy as the same message.
//
// Header values never carry line breaks: the addresses and the id are
// refused if they do, and the subject and display name (which may quote a
// tenant's words) are MIME-encoded, which turns any control character into
// an encoded word instead of a new header.
func (s *Sender) Deliver(id string, l Letter) error {
	if strings.ContainsAny(l.To+l.ReplyTo+s.From+id, "\r\n<>") {
		return fmt.Errorf("send mail: line break or bracket in an address or message id")
	}
	domain := "boxoffice.local"
	if _, d, ok := strings.Cut(s.From, "@"); ok && d != "" {
		domain = d
	}
	// 8bit where the server takes it (8BITMIME): the lines are short, and a
	// reader of the raw message (a log, a catcher) sees the text as written.
	// A server without it (Mailpit, some relays) is sent quoted-printable.
	err := s.deliver(id, domain, l, gomail.NoEncoding)
	var sendErr *gomail.SendError
	if errors.As(err, &sendErr) && sendErr.Reason == gomail.ErrNoUnencoded {
		err = s.deliver(id, domain, l, gomail.EncodingQP)
	}
	return err
}

// deliver sends l once, its text parts in enc.
func (s *Sender) deliver(id, domain string, l Letter, enc gomail.Encoding) error {
	m := gomail.NewMsg(gomail.WithEncoding(enc), gomail.WithCharset(gomail.CharsetUTF8))
	from := m.From(s.From)
	if l.FromName != "" {
		from = m.FromFormat(strings.Map(noControl, l.FromName), s.From)
	}
	if from != nil {
		return fmt.Errorf("send mail: sender %q: %w", s.From, from)
	}
	if err := m.To(l.To); err != nil {
		return fmt.Errorf("send mail: recipient: %w", err)
	}
	if l.ReplyTo != "" {
		if err := m.ReplyTo(l.ReplyTo); err != nil {
			return fmt.Errorf("send mail: reply-to: %w", err)
		}
	}
	m.Subject(l.Subject) // MIME-encoded when it holds anything but printable ASCII
	m.SetMessageIDWithValue(id + "@" + domain)
	m.SetDate()
	m.SetBodyString(gomail.TypeTextPlain, l.Text)
	if l.HTML != "" {
		m.AddAlternativeString(gomail.TypeTextHTML, l.HTML)
	}
	for _, a := range l.Attachments {
		if err := m.AttachReader(a.Name, bytes.NewReader(a.Data), gomail.WithFileContentType(gomail.ContentType(a.ContentType))); err != nil {
			return fmt.Errorf("send mail: attach %s: %w", a.Name, err)
		}
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.DialAndSend(m); err != nil {
		return fmt.Errorf("send mail to %s: %w", l.To, err)
	}
	return nil
}

// noControl drops control characters from a display name.
func noControl(r rune) rune {
	if r < 0x20 || r == 0x7f {
		return -1
	}
	return r
}

// client is an SMTP client for one delivery, as the Sender says.
func (s *Sender) client() (*gomail.Client, error) {
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return nil, fmt.Errorf("smtp address %q: %w", s.Addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("smtp port %q: %w", port, err)
	}
	opts := []gomail.Option{gomail.WithPort(n), gomail.WithTimeout(15 * time.Second), gomail.WithHELO("boxoffice")}
	switch s.TLS {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.TLSConfig != nil {
		cfg := s.TLSConfig.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		opts = append(opts, gomail.WithTLSConfig(cfg))
	}
	if s.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(s.Username),
			gomail.WithPassword(s.Password))
	}
	c, err := gomail.NewClient(host, opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp client: %w", err)
	}
	return c, nil
}

// Message is a caught message.
type Message struct {
	From, To string
	Data     string
	At       time.Time
}

// Header returns the value of the message's header name ("" when absent),
// unfolded (a long header goes on over lines that start with a space).
func (m Message) Header(name string) string {
	head, _, _ := strings.Cut(m.Data, "\r\n\r\n")
	var value []string
	in := false
	for _, line := range strings.Split(head, "\r\n") {
		if in && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) {
			value = append(value, strings.TrimSpace(line))
			continue
		}
		if in {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, name) {
			value, in = []string{strings.TrimSpace(v)}, true
		}
	}
	return strings.TrimSpace(strings.Join(value, " "))
}

func (m Message) Subject() string {
	v := m.Header("Subject")
	if decoded, err := new(mime.WordDecoder).DecodeHeader(v); err == nil {
		return decoded
	}
	return v
}

// Sink is an SMTP catcher for development and tests.
type Sink struct {
	ln     net.Listener
	logger *slog.Logger
	opts   SinkOptions
	mu     sync.Mutex
	msgs   []Message
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// SinkOptions make a sink behave as a production relay does.
type SinkOptions struct {
	// TLS, when set, offers STARTTLS with this certificate.
	TLS *tls.Config
	// Username and Password, when set, are required (AUTH PLAIN or LOGIN,
	// and only over TLS when TLS is set) before any mail is taken.
	Username, Password string
	// No8BitMIME leaves 8BITMIME out of the extensions offered, as
	// Mailpit and some relays do: 8bit mail must then be encoded.
	No8BitMIME bool
}

// NewSink listens for SMTP on addr (e.g. 127.0.0.1:0) and takes any mail.
func NewSink(addr string, logger *slog.Logger) (*Sink, error) {
	return NewSinkWith(addr, logger, SinkOptions{})
}

// NewSinkWith listens for SMTP on addr with a relay's demands.
func NewSinkWith(addr string, logger *slog.Logger, o SinkOptions) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("smtp sink: %w", err)
	}
	s := &Sink{ln: ln, logger: logger, opts: o, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is where the sink listens.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Close stops the sink, ending the sessions a client left open.
func (s *Sink) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Messages returns the caught messages, oldest first.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

func (s *Sink) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[conn] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.session(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
		}()
	}
}

// session speaks just enough SMTP for a client: EHLO, STARTTLS and AUTH
// when the options ask for them, MAIL, RCPT, DATA.
func (s *Sink) session(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(conn)
	reply := func(line string) { _, _ = conn.Write([]byte(line + "\r\n")) }
	reply("220 boxoffice mail sink")
	var m Message
	secure, authed := false, s.opts.Username == ""
	read := func() (string, bool) {
		line, err := r.ReadString('\n')
		return strings.TrimRight(line, "\r\n"), err == nil
	}
	for {
		line, ok := read()
		if !ok {
			return
		}
		cmd := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			ext := []string{"boxoffice"}
			if !s.opts.No8BitMIME {
				ext = append(ext, "8BITMIME")
			}
			if s.opts.TLS != nil && !secure {
				ext = append(ext, "STARTTLS")
			}
			if s.opts.Username != "" && (secure || s.opts.TLS == nil) {
				ext = append(ext, "AUTH PLAIN LOGIN")
			}
			for i, e := range ext {
				sep := "-"
				if i == len(ext)-1 {
					sep = " "
				}
				reply("250" + sep + e)
			}
		case cmd == "STARTTLS" && s.opts.TLS != nil && !secure:
			reply("220 go ahead")
			tc := tls.Server(conn, s.opts.TLS)
			hs, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := tc.HandshakeContext(hs)
			cancel()
			if err != nil {
				return
			}
			conn, r, secure = tc, bufio.NewReader(tc), true
		case strings.HasPrefix(cmd, "AUTH "):
			authed = s.auth(line, read, reply, secure)
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			if !authed {
				reply("530 5.7.0 authentication required")
				continue
			}
			from, _, _ := strings.Cut(strings.TrimSpace(line[10:]), " ")
			m = Message{From: strings.Trim(from, "<>")}
			reply("250 OK")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			to, _, _ := strings.Cut(strings.TrimSpace(line[8:]), " ")
			m.To = strings.Trim(to, "<>")
			reply("250 OK")
		case cmd == "DATA":
			reply("354 end with <CRLF>.<CRLF>")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			m.Data, m.At = strings.TrimRight(b.String(), "\r\n"), time.Now()
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
			reply("250 OK")
		case cmd == "QUIT":
			reply("221 bye")
			return
		default:
			reply("250 OK")
		}
	}
}

// auth checks an AUTH PLAIN or LOGIN exchange against the sink's
// credentials; over a plain connection when TLS is on offer, it refuses.
func (s *Sink) auth(line string, read func() (string, bool), reply func(string), secure bool) bool {
	if s.opts.TLS != nil && !secure {
		reply("538 5.7.11 encryption required for authentication")
		return false
	}
	fields := strings.Fields(line)
	var user, pass string
	switch strings.ToUpper(fields[1]) {
	case "PLAIN":
		resp := ""
		if len(fields) > 2 {
			resp = fields[2]
		} else {
			reply("334 ")
			resp, _ = read()
		}
		raw, _ := base64.StdEncoding.DecodeString(resp)
		if parts := strings.Split(string(raw), "\x00"); len(parts) == 3 {
			user, pass = parts[1], parts[2]
		}
	case "LOGIN":
		reply("334 " + base64.StdEncoding.EncodeToString([]byte("Username:")))
		u, _ := read()
		reply("334 " + base64.StdEncoding.EncodeToString([]byte("Password:")))
		p, _ := read()
		ub, _ := base64.StdEncoding.DecodeString(u)
		pb, _ := base64.StdEncoding.DecodeString(p)
		user, pass = string(ub), string(pb)
	default:
		reply("504 5.5.4 unrecognized authentication type")
		return false
	}
	if user != s.opts.Username || pass != s.opts.Password {
		reply("535 5.7.8 authentication credentials invalid")
		return false
	}
	reply("235 2.7.0 authenticated")
	return true
}

// Inbox is the web inbox: newest first, each message with its text, a
// link to its HTML as a mail client would show it and its attachments;
// and GET /api/messages, the same as JSON for tests and scripts (oldest
// first, each with from, to, subject (decoded), at, the decoded parts and
// the raw message).
func (s *Sink) Inbox() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/messages", func(w http.ResponseWriter, _ *http.Request) {
		type message struct {
			Index   int       `json:"index"`
			From    string    `json:"from"`
			To      string    `json:"to"`
			Subject string    `json:"subject"`
			At      time.Time `json:"at"`
			Parts
			Data string `json:"data"`
		}
		out := []message{}
		for i, m := range s.Messages() {
			parts, _ := m.Parts() // a message that does not parse is still listed, raw
			out = append(out, message{Index: i, From: m.From, To: m.To, Subject: m.Subject(), At: m.At, Parts: parts, Data: m.Data})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": out})
	})
	part := func(w http.ResponseWriter, r *http.Request) (Parts, bool) {
		msgs := s.Messages()
		i, err := strconv.Atoi(r.PathValue("i"))
		if err != nil || i < 0 || i >= len(msgs) {
			http.NotFound(w, r)
			return Parts{}, false
		}
		p, err := msgs[i].Parts()
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return Parts{}, false
		}
		return p, true
	}
	mux.HandleFunc("GET /messages/{i}/html", func(w http.ResponseWriter, r *http.Request) {
		if p, ok := part(w, r); ok {
			// As a mail client shows it: no script, nothing from the inbox.
			w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src https: data:; style-src 'unsafe-inline'")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(p.HTML))
		}
	})
	mux.HandleFunc("GET /messages/{i}/attachments/{n}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := part(w, r)
		if !ok {
			return
		}
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 0 || n >= len(p.Attachments) {
			http.NotFound(w, r)
			return
		}
		a := p.Attachments[n]
		w.Header().Set("Content-Type", a.ContentType)
		w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": a.Name}))
		_, _ = w.Write(a.Data)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		msgs := s.Messages()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		b.WriteString("<!doctype html><meta charset=utf-8><title>BoxOffice dev inbox</title><h1>Dev inbox</h1>")
		fmt.Fprintf(&b, "<p>%d messages (as JSON: <a href=\"/api/messages\">/api/messages</a>)</p>", len(msgs))
		for i := len(msgs) - 1; i >= 0; i-- {
			m := msgs[i]
			fmt.Fprintf(&b, "<hr><h2>%s</h2><p>from %s to %s at %s</p>", html.EscapeString(m.Subject()),
				html.EscapeString(m.Header("From")), html.EscapeString(m.To), m.At.Format(time.RFC3339))
			p, err := m.Parts()
			if err != nil {
				fmt.Fprintf(&b, "<pre>%s</pre>", html.EscapeString(m.Data))
				continue
			}
			if p.HTML != "" {
				fmt.Fprintf(&b, "<p><a href=\"/messages/%d/html\">As HTML</a></p>", i)
			}
			for n, a := range p.Attachments {
				fmt.Fprintf(&b, "<p>Attached: <a href=\"/messages/%d/attachments/%d\">%s</a> (%s, %d bytes)</p>", i, n,
					html.EscapeString(a.Name), html.EscapeString(a.ContentType), len(a.Data))
			}
			fmt.Fprintf(&b, "<pre>%s</pre>", html.EscapeString(p.Text))
		}
		_, _ = w.Write([]byte(b.String()))
	})
	return mux
}

// Serve runs the web inbox on addr until ctx ends.
func (s *Sink) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Inbox(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}
