package payment_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/payment"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"payment.authorized","payment":{"id":"pay_1"}}`)
	header := payment.Sign("new", now, body)

	require.NoError(t, payment.Verify(header, body, []string{"new"}, payment.DefaultTolerance, now))
	require.NoError(t, payment.Verify(header, body, []string{"old", "new"}, payment.DefaultTolerance, now), "rotation: any current secret")
	require.NoError(t, payment.Verify(payment.Sign("old", now, body), body, []string{"old", "new"}, payment.DefaultTolerance, now))

	require.ErrorIs(t, payment.Verify(header, append(body, ' '), []string{"new"}, payment.DefaultTolerance, now), payment.ErrBadSignature, "tampered body")
	require.ErrorIs(t, payment.Verify(header, body, []string{"wrong"}, payment.DefaultTolerance, now), payment.ErrBadSignature, "wrong secret")
	require.ErrorIs(t, payment.Verify(header, body, []string{"new"}, payment.DefaultTolerance, now.Add(6*time.Minute)), payment.ErrStaleSignature)
	require.ErrorIs(t, payment.Verify(header, body, []string{"new"}, payment.DefaultTolerance, now.Add(-6*time.Minute)), payment.ErrStaleSignature, "from the future")
	require.ErrorIs(t, payment.Verify("", body, []string{"new"}, payment.DefaultTolerance, now), payment.ErrBadSignatureHeader)
	require.ErrorIs(t, payment.Verify("t=abc,v1=00", body, []string{"new"}, payment.DefaultTolerance, now), payment.ErrBadSignatureHeader)
	require.ErrorIs(t, payment.Verify(strings.Split(header, ",")[0], body, []string{"new"}, payment.DefaultTolerance, now), payment.ErrBadSignatureHeader, "no v1")
	require.ErrorIs(t, payment.Verify(header, body, nil, payment.DefaultTolerance, now), payment.ErrBadSignature, "no secrets configured")
}

// FuzzVerify: the header parser never panics and never accepts a header it
// was not given a valid signature for.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt"}`)
	f.Add(payment.Sign("s", now, body), body)
	f.Add("t=1800000000,v1=", body)
	f.Add("t=,v1=zz,v1=00", []byte{})
	f.Add("=,=,=", []byte("x"))
	f.Add("t=1800000000,v1="+strings.Repeat("a", 64), body)
	f.Fuzz(func(t *testing.T, header string, b []byte) {
		err := payment.Verify(header, b, []string{"s"}, payment.DefaultTolerance, now)
		if err == nil {
			// Accepted: the header must carry our own signature for its timestamp.
			var ts int64
			for _, part := range strings.Split(header, ",") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
					ts, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			_, want, _ := strings.Cut(payment.Sign("s", time.Unix(ts, 0), b), ",")
			require.Contains(t, header, want)
		}
	})
}
