package tenant

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

type oneSecret []byte

func (s oneSecret) BuyerTokenKeys(context.Context, uuid.UUID) ([]*TokenKey, error) {
	return NewTokenKeys([][]byte{s}), nil
}

// keys are a tenant's keys made once, as the API's cache keeps them.
type keys []*TokenKey

func (k keys) BuyerTokenKeys(context.Context, uuid.UUID) ([]*TokenKey, error) { return k, nil }

// Every buyer in a burst brings a token of its own, so each request
// verifies one: the cost per request.
func BenchmarkVerifyBuyerToken(b *testing.B) {
	secret := oneSecret("a tenant's buyer token secret, 32+")
	tok, err := SignBuyerToken(secret, uuid.New(), "buyer-123", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cached := keys(NewTokenKeys([][]byte{secret}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyBuyerToken(ctx, cached, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// The verifier refuses what a JWT library would, and a few things more.
func TestVerifyBuyerToken(t *testing.T) {
	secret := oneSecret("a tenant's buyer token secret, 32+")
	tid := uuid.New()
	ctx := context.Background()
	sign := func(header, claims string, key []byte) string {
		enc := base64.RawURLEncoding
		input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
		m := hmac.New(sha256.New, key)
		m.Write([]byte(input))
		return input + "." + enc.EncodeToString(m.Sum(nil))
	}
	hs256 := `{"alg":"HS256","typ":"JWT"}`
	now := time.Now().Unix()
	claims := func(extra string) string {
		return fmt.Sprintf(`{"sub":"ana","tid":"%s"%s}`, tid, extra)
	}
	good := sign(hs256, claims(fmt.Sprintf(`,"exp":%d`, now+60)), secret)
	b, err := VerifyBuyerToken(ctx, secret, good)
	if err != nil || b.ID != "ana" || b.TenantID != tid {
		t.Fatalf("a good token: %+v %v", b, err)
	}
	if _, err := VerifyBuyerToken(ctx, secret, sign(hs256, claims(fmt.Sprintf(`,"exp":%d`, now-3)), secret)); err != nil {
		t.Fatalf("expired within the leeway is still good: %v", err)
	}
	for name, tok := range map[string]string{
		"expired":           sign(hs256, claims(fmt.Sprintf(`,"exp":%d`, now-60)), secret),
		"no exp":            sign(hs256, claims(""), secret),
		"exp as a string":   sign(hs256, claims(`,"exp":"9999999999"`), secret),
		"not valid yet":     sign(hs256, claims(fmt.Sprintf(`,"exp":%d,"nbf":%d`, now+600, now+60)), secret),
		"critical header":   sign(`{"alg":"HS256","crit":["b64"]}`, claims(fmt.Sprintf(`,"exp":%d`, now+60)), secret),
		"alg none":          sign(`{"alg":"none"}`, claims(fmt.Sprintf(`,"exp":%d`, now+60)), secret),
		"HS512 header":      sign(`{"alg":"HS512"}`, claims(fmt.Sprintf(`,"exp":%d`, now+60)), secret),
		"other secret":      sign(hs256, claims(fmt.Sprintf(`,"exp":%d`, now+60)), []byte("guess")),
		"four segments":     good + ".x",
		"truncated sig":     good[:len(good)-4],
		"sig's unused bits": good[:len(good)-1] + string(good[len(good)-1]+1),
		"no sub":            sign(hs256, fmt.Sprintf(`{"tid":"%s","exp":%d}`, tid, now+60), secret),
		"header not base64": "!!." + good[strings.IndexByte(good, '.')+1:],
		"exp far ahead":     sign(hs256, claims(`,"exp":1e300`), secret),
		"exp in a month":    sign(hs256, claims(fmt.Sprintf(`,"exp":%d`, now+31*86400)), secret),
		"NUL in sub":        sign(hs256, fmt.Sprintf(`{"sub":"a\u0000b","tid":"%s","exp":%d}`, tid, now+60), secret),
		"newline in sub":    sign(hs256, fmt.Sprintf(`{"sub":"a\nb","tid":"%s","exp":%d}`, tid, now+60), secret),
		"empty":             "",
		"sub given twice":   sign(hs256, fmt.Sprintf(`{"sub":"ana","sub":"bob","tid":"%s","exp":%d}`, tid, now+60), secret),
		"claim names' case": sign(hs256, fmt.Sprintf(`{"SUB":"ana","tid":"%s","exp":%d}`, tid, now+60), secret),
	} {
		if _, err := VerifyBuyerToken(ctx, secret, tok); !errors.Is(err, ErrBadBuyerToken) {
			t.Errorf("%s: got %v, want ErrBadBuyerToken", name, err)
		}
	}
}
