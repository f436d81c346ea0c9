// Package netguard keeps outbound requests to addresses a tenant names (a
// JWKS URL, later webhook targets) off the deployment's own network: no
// loopback, private, link-local, unspecified, multicast or cloud metadata
// address, checked on the address actually dialled — after DNS, at send
// time — so a name that resolves elsewhere later cannot slip past.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrForbidden is a target that may not be reached.
var ErrForbidden = errors.New("target address not allowed")

// Allowed reports whether ip may be dialled: public unicast only.
func Allowed(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() &&
		!sharedAddressSpace.Contains(ip) && ip != metadataV6
}

var (
	// 100.64.0.0/10 is carrier-grade NAT, not the internet.
	sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")
	// AWS's IPv6 instance metadata (169.254.169.254 is link-local already).
	metadataV6 = netip.MustParseAddr("fd00:ec2::254")
)

// Guard checks targets; AllowPrivate (development, tests) lets anything
// through.
type Guard struct{ AllowPrivate bool }

// CheckURL refuses a target URL that is not https (http too when private
// targets are allowed) or names a literal address that may not be reached.
func (g Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: not an absolute URL", ErrForbidden)
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !g.AllowPrivate) {
		return fmt.Errorf("%w: https only", ErrForbidden)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !g.AllowPrivate && !Allowed(ip) {
		return fmt.Errorf("%w: %s", ErrForbidden, ip)
	}
	return nil
}

// Client is an HTTP client whose every connection is checked where it is
// dialled, with a timeout per request and no redirects followed (a
// redirect could lead anywhere).
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if g.AllowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !Allowed(ap.Addr()) {
			return fmt.Errorf("%w: %s", ErrForbidden, address)
		}
		return nil
	}}
	transport := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}
	return &http.Client{Timeout: timeout, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
