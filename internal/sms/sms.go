// Package sms sends text messages: the one-time login codes of stores
// whose tenants have no login of their own. Twilio's Messages API is the
// real provider; in development every message goes to the dev inbox.
package sms

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"boxoffice/internal/mail"
)

// Sender sends one text message.
type Sender interface {
	SendSMS(ctx context.Context, to, body string) error
}

// Twilio sends through Twilio's Messages API.
type Twilio struct {
	AccountSID string
	AuthToken  string
	From       string // a Twilio number or messaging service sender
	// BaseURL defaults to https://api.twilio.com (tests point it elsewhere).
	BaseURL string
	Client  *http.Client
}

// SendSMS posts the message; any answer but 2xx is an error (without the
// body, which may echo the message).
func (t *Twilio) SendSMS(ctx context.Context, to, body string) error {
	base := t.BaseURL
	if base == "" {
		base = "https://api.twilio.com"
	}
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	form := url.Values{"To": {to}, "From": {t.From}, "Body": {body}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		base+"/2010-04-01/Accounts/"+url.PathEscape(t.AccountSID)+"/Messages.json", strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("sms request: %w", err)
	}
	req.SetBasicAuth(t.AccountSID, t.AuthToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("send sms: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("send sms: provider answered %s", resp.Status)
	}
	return nil
}

// ToMail delivers every text message as an e-mail to the development mail
// catcher, where it shows in the dev inbox ("SMS to +351…").
type ToMail struct {
	Mail *mail.Sender
}

// SendSMS mails the message.
func (m ToMail) SendSMS(_ context.Context, to, body string) error {
	return m.Mail.Send("sms@dev.boxoffice.local", "SMS to "+to, body)
}
