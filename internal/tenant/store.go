package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Profile is what a tenant's store shows of it, to anyone.
type Profile struct {
	Slug    string            `json:"slug"`
	Name    string            `json:"name"`
	Theme   map[string]string `json:"theme" doc:"Branding: colours (primary, accent, background, text), logoUrl, font, language (en, pt) and replyTo (where answers to the store's mail go)"`
	Domains []string          `json:"domains" doc:"The hosts the store is served on; browsers on them may call the API"`
	// SMSCountries are the calling codes the store sends login codes to
	// by SMS; none: e-mail only.
	SMSCountries []string `json:"smsCountries" doc:"Calling codes (+351, +44, ...) login codes may be sent to by SMS; empty: e-mail only"`
	// Colours are what the store and its mail are drawn in: the theme's,
	// and the defaults for those it leaves out (what the console's colour
	// pickers start from).
	Colours map[string]string `json:"colours" doc:"The colours in use: primary, accent, background and text, the theme's or the defaults"`
}

// StoreLanguageSQL is a scalar subquery for other packages' SQL: the store
// language ("" for the default) of the tenant whose id the SQL expression
// tenantID gives — what seats and dates are named in.
func StoreLanguageSQL(tenantID string) string {
	return "(SELECT coalesce(theme->>'language', '') FROM tenants WHERE id = " + tenantID + ")"
}

// Colour is the store's colour k (primary, accent, background or text): the
// theme's, or the default when the theme names none.
func (p *Profile) Colour(k string) string {
	if v := p.Theme[k]; v != "" {
		return v
	}
	switch k {
	case "primary":
		return "#1f4fd1"
	case "accent":
		return "#c2185b"
	case "background":
		return "#ffffff"
	case "text":
		return "#1d1d1f"
	}
	return ""
}

// withColours fills in Colours.
func (p *Profile) withColours() *Profile {
	p.Colours = map[string]string{}
	for _, k := range []string{"primary", "accent", "background", "text"} {
		p.Colours[k] = p.Colour(k)
	}
	return p
}

// StoreSettings is what a tenant admin sets about the store.
type StoreSettings struct {
	Name         string
	Theme        map[string]string
	Domains      []string
	SMSCountries []string
}

// callingCode is an E.164 country calling code.
var callingCode = regexp.MustCompile(`^\+[1-9][0-9]{0,2}$`)

// SendsSMSTo reports whether the store may send an SMS to the E.164 number
// phone: its calling code is one of SMSCountries.
func (p *Profile) SendsSMSTo(phone string) bool {
	for _, c := range p.SMSCountries {
		if strings.HasPrefix(phone, c) {
			return true
		}
	}
	return false
}

// ErrDomainTaken is returned when another tenant already serves its store on
// one of the domains.
var ErrDomainTaken = errors.New("a store domain is already another tenant's")

// ErrInvalidStore is returned for a theme or domain the store cannot use.
var ErrInvalidStore = errors.New("invalid store settings")

// themeKeys are the theme entries a store understands.
var themeKeys = map[string]*regexp.Regexp{
	"primary":    colour,
	"accent":     colour,
	"background": colour,
	"text":       colour,
	// An https URL, or a logo uploaded to the store's own files.
	// No SVG: an SVG is a document that can run script on the origin
	// that serves it.
	"logoUrl": regexp.MustCompile(`^(https://[^\s"'<>]{1,500}|logo/[0-9a-f-]{36}\.(png|jpg|webp))$`),
	// The tenant's own login page, if it has one: the store sends
	// shoppers there with a state nonce and takes back the buyer token
	// only with that nonce (#/login?token=…&state=…). Plain http only
	// on this machine, for local development.
	"loginUrl": regexp.MustCompile(`^(https://|http://(localhost|127\.0\.0\.1)(:[0-9]{1,5})?/)[^\s"'<>#]{0,500}$`),
	"font":     regexp.MustCompile(`^(system|serif|humanist|mono)$`),
	"language": regexp.MustCompile(`^(en|pt)$`),
	// Where buyers' answers to the store's mail go.
	"replyTo": regexp.MustCompile(`^[^\s@<>"(),;:]{1,64}@[a-zA-Z0-9.-]{1,200}\.[a-zA-Z]{2,}$`),
}

var colour = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// hostname is a DNS name, optionally with a port (local development).
var hostname = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)

// validate checks theme entries and domains, and lowercases the domains.
func (p *StoreSettings) validate() error {
	for k, v := range p.Theme {
		re, ok := themeKeys[k]
		if !ok {
			return fmt.Errorf("%w: unknown theme entry %q (known: primary, accent, background, text, logoUrl, loginUrl, font, language, replyTo)", ErrInvalidStore, k)
		}
		if !re.MatchString(v) {
			return fmt.Errorf("%w: theme %s %q (colours are #rrggbb; logoUrl and loginUrl are https URLs; font is system, serif, humanist or mono; language is en or pt; replyTo is an e-mail address)", ErrInvalidStore, k, v)
		}
	}
	for _, c := range p.SMSCountries {
		if !callingCode.MatchString(c) {
			return fmt.Errorf("%w: SMS country %q is not a calling code (+351, +44, +1, ...)", ErrInvalidStore, c)
		}
	}
	seen := map[string]bool{}
	out := p.Domains[:0]
	for _, d := range p.Domains {
		d = strings.ToLower(strings.TrimSpace(d))
		if !hostname.MatchString(d) {
			return fmt.Errorf("%w: domain %q is not a host name", ErrInvalidStore, d)
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	p.Domains = out
	return nil
}

// claimDomains makes sure no tenant but tenantID has any of domains, and
// keeps any other transaction from taking one until tx ends: one domain
// change at a time, so two tenants cannot both take a domain between the
// check and the write.
func claimDomains(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, domains []string) error {
	if len(domains) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('boxoffice.store_domains'))`); err != nil {
		return fmt.Errorf("lock store domains: %w", err)
	}
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tenants WHERE id <> $1 AND domains && $2)`,
		tenantID, domains).Scan(&taken); err != nil {
		return fmt.Errorf("check store domains: %w", err)
	}
	if taken {
		return ErrDomainTaken
	}
	return nil
}

// SetStore replaces a tenant's store name, theme and domains. A domain
// belongs to one tenant: the stores are served by host, and browsers on a
// domain may call the API for that tenant only.
func (s *Store) SetStore(ctx context.Context, tenantID uuid.UUID, p StoreSettings) (*Profile, error) {
	if p.Theme == nil {
		p.Theme = map[string]string{}
	}
	if p.Domains == nil {
		p.Domains = []string{}
	}
	if p.SMSCountries == nil {
		p.SMSCountries = []string{}
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	theme, err := json.Marshal(p.Theme)
	if err != nil {
		return nil, fmt.Errorf("encode theme: %w", err)
	}
	var out Profile
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := claimDomains(ctx, tx, tenantID, p.Domains); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `
			UPDATE tenants SET name = $2, theme = $3, domains = $4, sms_countries = $5 WHERE id = $1
			RETURNING slug, name, theme, domains, sms_countries`, tenantID, p.Name, theme, p.Domains, p.SMSCountries).
			Scan(&out.Slug, &out.Name, &out.Theme, &out.Domains, &out.SMSCountries)
		if err != nil {
			return fmt.Errorf("set store of %s: %w", tenantID, db.NotFound(err))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out.withColours(), nil
}

// ProfileOf returns a tenant's store profile by id.
func (s *Store) ProfileOf(ctx context.Context, tenantID uuid.UUID) (*Profile, error) {
	return ProfileOf(ctx, s.pool, tenantID)
}

// ProfileOf returns a tenant's store profile by id, read with q: what
// another part's letters in the tenant's name are made of.
func ProfileOf(ctx context.Context, q db.DBTX, tenantID uuid.UUID) (*Profile, error) {
	var p Profile
	err := q.QueryRow(ctx, `SELECT slug, name, theme, domains, sms_countries FROM tenants WHERE id = $1`, tenantID).
		Scan(&p.Slug, &p.Name, &p.Theme, &p.Domains, &p.SMSCountries)
	if err != nil {
		return nil, fmt.Errorf("store of tenant %s: %w", tenantID, db.NotFound(err))
	}
	return p.withColours(), nil
}

// StoreProfile returns the public profile of the tenant with the slug, and
// its id (db.ErrNotFound when there is none).
func (s *Store) StoreProfile(ctx context.Context, slug string) (uuid.UUID, *Profile, error) {
	var id uuid.UUID
	var p Profile
	err := s.pool.QueryRow(ctx, `SELECT id, slug, name, theme, domains, sms_countries FROM tenants WHERE slug = $1`, slug).
		Scan(&id, &p.Slug, &p.Name, &p.Theme, &p.Domains, &p.SMSCountries)
	if err != nil {
		return uuid.Nil, nil, fmt.Errorf("store %q: %w", slug, db.NotFound(err))
	}
	return id, p.withColours(), nil
}

// Domains returns every tenant's store domains, by tenant: what the API's
// CORS check allows.
func (s *Store) Domains(ctx context.Context) (map[string]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, unnest(domains) FROM tenants`)
	if err != nil {
		return nil, fmt.Errorf("store domains: %w", err)
	}
	out := map[string]uuid.UUID{}
	var id uuid.UUID
	var domain string
	if _, err := pgx.ForEachRow(rows, []any{&id, &domain}, func() error { out[domain] = id; return nil }); err != nil {
		return nil, fmt.Errorf("store domains: %w", err)
	}
	return out, nil
}

// SlugsByDomain maps every store domain to its tenant's slug: how stores
// are found by the host they are asked for.
func (s *Store) SlugsByDomain(ctx context.Context) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT slug, unnest(domains) FROM tenants`)
	if err != nil {
		return nil, fmt.Errorf("store domains: %w", err)
	}
	out := map[string]string{}
	var slug, domain string
	if _, err := pgx.ForEachRow(rows, []any{&slug, &domain}, func() error { out[domain] = slug; return nil }); err != nil {
		return nil, fmt.Errorf("store domains: %w", err)
	}
	return out, nil
}
