package storefront

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"boxoffice/internal/tenant"
)

// PublishTenant builds a tenant's store from its current profile and
// publishes it: what `boxoffice store publish`, `boxoffice dev` and the
// republish job do.
func PublishTenant(ctx context.Context, tenants *tenant.Store, b Bucket, slug, apiBase string) error {
	_, profile, err := tenants.StoreProfile(ctx, slug)
	if err != nil {
		return err
	}
	site, err := Build(Source{Profile: *profile, APIBase: apiBase})
	if err != nil {
		return err
	}
	return b.Publish(ctx, slug, site)
}

// HostSlugs returns a SlugOfHost that looks hosts up among the tenants'
// store domains (with or without the port), refreshed every few seconds.
func HostSlugs(tenants *tenant.Store) func(ctx context.Context, host string) string {
	var mu sync.Mutex
	var byDomain map[string]string
	var loaded time.Time
	return func(ctx context.Context, host string) string {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(loaded) > 5*time.Second {
			if m, err := tenants.SlugsByDomain(ctx); err == nil {
				byDomain, loaded = m, time.Now()
			}
		}
		host = strings.ToLower(host)
		if slug, ok := byDomain[host]; ok {
			return slug
		}
		if h, _, err := net.SplitHostPort(host); err == nil {
			return byDomain[h]
		}
		return ""
	}
}
