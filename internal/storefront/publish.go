package storefront

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"boxoffice/internal/tenant"
)

// Publisher publishes tenants' stores.
type Publisher struct {
	Tenants *tenant.Store
	Bucket  Bucket
	// APIBase and StripeKey are built into the stores (see Source).
	APIBase   string
	StripeKey string
}

// Build renders a tenant's store from its current profile.
func (p *Publisher) Build(ctx context.Context, slug string) (Site, error) {
	_, profile, err := p.Tenants.StoreProfile(ctx, slug)
	if err != nil {
		return nil, err
	}
	return Build(Source{Profile: *profile, APIBase: p.APIBase, StripeKey: p.StripeKey})
}

// Publish builds a tenant's store and uploads it: what `boxoffice store
// publish`, `boxoffice dev` and the republish job do.
func (p *Publisher) Publish(ctx context.Context, slug string) error {
	site, err := p.Build(ctx, slug)
	if err != nil {
		return err
	}
	return p.Bucket.Publish(ctx, slug, site)
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
