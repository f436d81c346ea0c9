package netguard_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/netguard"
)

func TestOnlyPublicAddresses(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "::1", "fe80::1", "fc00::1", "fd00:ec2::254", "::ffff:127.0.0.1", "224.0.0.1"} {
		require.False(t, netguard.Allowed(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"93.184.216.34", "2606:4700::1111"} {
		require.True(t, netguard.Allowed(netip.MustParseAddr(a)), a)
	}
	strict := netguard.Guard{}
	require.ErrorIs(t, strict.CheckURL("http://example.com/jwks"), netguard.ErrForbidden, "https only")
	require.ErrorIs(t, strict.CheckURL("https://169.254.169.254/latest"), netguard.ErrForbidden)
	require.NoError(t, strict.CheckURL("https://example.com/.well-known/jwks.json"))
	require.NoError(t, netguard.Guard{AllowPrivate: true}.CheckURL("http://127.0.0.1:1234/jwks"))
}

// The check is made on the address dialled: a name that resolves to the
// deployment's own network is refused at connect time.
func TestClientRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	_, err := netguard.Guard{}.Client(time.Second).Get(srv.URL)
	require.ErrorIs(t, err, netguard.ErrForbidden)
	_, err = netguard.Guard{}.Client(time.Second).Get("http://localhost:" + srv.URL[len("http://127.0.0.1:"):])
	require.ErrorIs(t, err, netguard.ErrForbidden)
	resp, err := netguard.Guard{AllowPrivate: true}.Client(time.Second).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
}
