package mail_test

import (
	"bufio"
	"io"
	"log/slog"
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
	require.Equal(t, "text/plain; charset=utf-8", msg.Header.Get("Content-Type"))
	body, err := io.ReadAll(msg.Body)
	require.NoError(t, err)
	require.NotContains(t, string(body), "evil")
	require.Equal(t, "Your tickets: "+evil, m.Subject(), "the subject arrives whole, encoded")

	require.Error(t, s.Send("a@example.com\r\nBcc: b@example.com", "x", "y"))
}
