// Package mail sends e-mail over SMTP and, for development, catches it: a
// small SMTP server that keeps messages in memory with a web inbox.
package mail

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/smtp"
	"strings"
	"sync"
	"time"
)

// Sender sends plain-text mail through an SMTP server.
type Sender struct {
	Addr string // host:port
	From string
}

// Send delivers one message with a fresh Message-ID.
func (s *Sender) Send(to, subject, body string) error {
	var id [12]byte
	_, _ = rand.Read(id[:])
	return s.SendID(hex.EncodeToString(id[:]), to, subject, body)
}

// SendID delivers one message whose Message-ID is <id@sender's domain>.
// A message that may be sent again — tickets re-sent after a crash or a
// restore replays the outbox — keeps one id, so mail clients and the
// tenant's logs see the copy as the same message.
//
// Header values never carry line breaks: the addresses and the id are
// refused if they do, and the subject (which may quote a tenant's product
// name) is MIME-encoded, which turns any control character into an encoded
// word instead of a new header.
func (s *Sender) SendID(id, to, subject, body string) error {
	if strings.ContainsAny(to+s.From+id, "\r\n<>") {
		return fmt.Errorf("send mail: line break or bracket in an address or message id")
	}
	domain := "boxoffice.local"
	if _, d, ok := strings.Cut(s.From, "@"); ok && d != "" {
		domain = d
	}
	msg := "From: " + s.From + "\r\nTo: " + to + "\r\nSubject: " + mime.QEncoding.Encode("utf-8", subject) +
		"\r\nMessage-ID: <" + id + "@" + domain + ">" +
		"\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nDate: " +
		time.Now().UTC().Format(time.RFC1123Z) + "\r\n\r\n" + strings.ReplaceAll(body, "\n", "\r\n")
	if err := smtp.SendMail(s.Addr, nil, s.From, []string{to}, []byte(msg)); err != nil {
		return fmt.Errorf("send mail to %s: %w", to, err)
	}
	return nil
}

// Message is a caught message.
type Message struct {
	From, To string
	Data     string
	At       time.Time
}

// Header returns the value of the message's header name ("" when absent).
func (m Message) Header(name string) string {
	for _, line := range strings.Split(m.Data, "\r\n") {
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ": "); ok && strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Subject returns the message's Subject header, decoded.
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
	mu     sync.Mutex
	msgs   []Message
	wg     sync.WaitGroup
}

// NewSink listens for SMTP on addr (e.g. 127.0.0.1:0).
func NewSink(addr string, logger *slog.Logger) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("smtp sink: %w", err)
	}
	s := &Sink{ln: ln, logger: logger}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is where the sink listens.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Close stops the sink.
func (s *Sink) Close() { _ = s.ln.Close(); s.wg.Wait() }

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
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.session(conn)
		}()
	}
}

// session speaks just enough SMTP for net/smtp.SendMail.
func (s *Sink) session(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(conn)
	reply := func(line string) { _, _ = conn.Write([]byte(line + "\r\n")) }
	reply("220 boxoffice mail sink")
	var m Message
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			reply("250 boxoffice")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			m = Message{From: strings.Trim(strings.TrimSpace(line[10:]), "<>")}
			reply("250 OK")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			m.To = strings.Trim(strings.TrimSpace(line[8:]), "<>")
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

// Inbox is the web inbox: newest first, each message in full.
func (s *Sink) Inbox() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		msgs := s.Messages()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		b.WriteString("<!doctype html><title>BoxOffice dev inbox</title><h1>Dev inbox</h1>")
		fmt.Fprintf(&b, "<p>%d messages</p>", len(msgs))
		for i := len(msgs) - 1; i >= 0; i-- {
			m := msgs[i]
			fmt.Fprintf(&b, "<hr><h2>%s</h2><p>to %s at %s</p><pre>%s</pre>", html.EscapeString(m.Subject()),
				html.EscapeString(m.To), m.At.Format(time.RFC3339), html.EscapeString(m.Data))
		}
		_, _ = w.Write([]byte(b.String()))
	})
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
