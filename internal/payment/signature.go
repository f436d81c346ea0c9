package payment

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a webhook's signature: "t=<unix seconds>,v1=<hex>",
// where v1 is HMAC-SHA256 over "<t>.<raw body>" with a shared secret. Several
// v1 values may be present while a secret is being rotated.
const SignatureHeader = "BoxOffice-Signature"

// DefaultTolerance is how far a webhook's timestamp may be from now.
const DefaultTolerance = 5 * time.Minute

// Signature errors.
var (
	ErrBadSignatureHeader = errors.New("malformed signature header")
	ErrStaleSignature     = errors.New("signature timestamp outside tolerance")
	ErrBadSignature       = errors.New("signature does not match")
)

// Sign returns the signature header value for body at time t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks header against the raw body with any of the secrets (more
// than one during a rotation), in constant time per comparison, and refuses
// timestamps further than tolerance from now.
func Verify(header string, body []byte, secrets []string, tolerance time.Duration, now time.Time) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrBadSignatureHeader
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrBadSignatureHeader
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s", ErrStaleSignature, d.Round(time.Second))
	}
	for _, secret := range secrets {
		want := mac(secret, ts, body)
		for _, got := range sigs {
			if hmac.Equal([]byte(got), []byte(want)) {
				return nil
			}
		}
	}
	return ErrBadSignature
}
