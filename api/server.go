// Package api is BoxOffice's HTTP API: a Fiber app whose operations are
// registered with huma, which validates requests and generates the OpenAPI
// document served at /openapi.json and browsable at /docs.
package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humafiber"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"riverqueue.com/riverui"

	"boxoffice/internal/audit"
	"boxoffice/internal/cache"
	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/live"
	"boxoffice/internal/login"
	"boxoffice/internal/mail"
	"boxoffice/internal/metrics"
	"boxoffice/internal/netguard"
	"boxoffice/internal/ops"
	"boxoffice/internal/product"
	"boxoffice/internal/rehearsal"
	"boxoffice/internal/reservation"
	"boxoffice/internal/session"
	"boxoffice/internal/sms"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/internal/tracing"
	"boxoffice/internal/waitingroom"
	"boxoffice/internal/wake"
	"boxoffice/internal/webhook"
	"boxoffice/web"
)

// Deps are the services the API calls.
type Deps struct {
	Pool         *pgxpool.Pool
	Tenants      *tenant.Store
	Products     *product.Store
	Reservations *reservation.Service
	Metrics      *metrics.Metrics
	// AvailabilityCacheBytes bounds the availability caches, views and pages
	// half each (default 128 MiB).
	AvailabilityCacheBytes int
	Logger                 *slog.Logger
	// AdminKey is the platform admin's bearer key.
	AdminKey string
	// Audit, when set, records operators' and admins' actions.
	Audit *audit.Log
	// Rehearsals, when set, starts and reads rehearsals.
	Rehearsals *rehearsal.Store
	// Sessions, when set, signs the console in (/console/ and
	// /v1/console/session).
	Sessions *session.Store
	// Login issues passwordless login codes; Mailer and SMS deliver them
	// (a nil one turns that channel off).
	Login  *login.Store
	Mailer *mail.Sender
	SMS    sms.Sender
	// StoresURL is where published stores are served by path
	// (/s/{slug}/), shown in the publish answer; empty when a CDN serves
	// them. Stores are never served by the API: a tenant's files on the
	// API's and console's origin could act as whoever is signed in there.
	StoresURL string
	// StreamsPerClient caps the event streams one client (an IPv4
	// address or an IPv6 /64) holds open on this process; 0: no cap.
	StreamsPerClient int
	// StreamPeriod is how often the availability feed of a watched
	// product looks for a change (default 1 s).
	StreamPeriod time.Duration
	// LoginChallengeBits is the proof of work a passwordless login start
	// asks for (0: none).
	LoginChallengeBits int
	// SMSDailyCap is how many SMS login codes one tenant's store may send
	// a day (UTC). Default 1000.
	SMSDailyCap int
	// ReservedHosts are the API's and the console's own hosts (host or
	// host:port): no tenant may claim one as a store domain, which would
	// make its store, and whatever it uploads, the API's origin.
	ReservedHosts []string
	// StoreBucket, when set, takes tenants' logo uploads (presigned) and
	// PUT /v1/store queues a republish of the tenant's store.
	StoreBucket *storefront.Bucket
	// DevOrigins lets pages on http://localhost and http://127.0.0.1 (any
	// port) call the API from a browser: `boxoffice dev` only.
	DevOrigins bool
	// AccessLog receives one JSON line per request (BOXOFFICE_ACCESS_LOG),
	// one Write each; nil: no access log.
	AccessLog io.Writer
	// PrivateTargets lets tenants name private addresses and http
	// (BOXOFFICE_ALLOW_PRIVATE_TARGETS).
	PrivateTargets bool
	// Ready reports whether the database is reachable and migrated.
	Ready func(ctx context.Context) error
	// River lists and retries jobs and backs the River UI.
	River *river.Client[pgx.Tx]
	// Reporter builds the operators' queue figures.
	Reporter *ops.Reporter
	// DLQ is the SQS dead-letter queue; nil with the River backend.
	DLQ *sqsqueue.Ops
	// Checkout takes orders and payment webhooks; nil leaves them out.
	Checkout *checkout.Service
	// WebhookSecrets verify provider webhooks (several during a rotation).
	WebhookSecrets []string
	// Webhooks manages tenants' webhook endpoints; nil leaves them out.
	Webhooks *webhook.Service
	// WaitingRoom runs products' queues; nil leaves the endpoints out.
	WaitingRoom *waitingroom.Service
	// RateLimits cap joins, polls and reservations per IP and per buyer.
	RateLimits RateLimits
	// Tracer, when it records, makes a server span of every request,
	// continuing the caller's trace (traceparent).
	Tracer trace.TracerProvider
}

// Server is the API.
type Server struct {
	Deps
	app       *fiber.App
	api       huma.API
	keys      *cache.Cache[string, tenant.KeyOwner]
	tokenKeys *cache.Cache[uuid.UUID, []*tenant.TokenKey]
	limits    *limits
	fast      *fastCreate
	// Identity providers' tokens: their keys, their tenants, and tokens
	// already verified (each distinct token costs one signature check).
	keySets           *tenant.KeySets
	issuers           *cache.Cache[string, tenant.Issuer]
	providerTokens    *cache.Cache[string, verifiedToken]
	productCache      *cache.Cache[uuid.UUID, *product.Product]
	profiles          *cache.Cache[string, *profileView]
	catalogs          *cache.Cache[string, *catalogView]
	layouts           *cache.Cache[layoutKey, *layoutView]
	uploads           *fixedWindow // presigned uploads (logos, pictures) per tenant and hour
	streams           *perClient   // open event streams per client
	live              *live.Hub
	stopping          chan struct{} // closed when the server stops: streams end
	stopOnce          sync.Once
	domains           storeDomains
	availability      *cache.Cache[uuid.UUID, *availabilityView]
	availabilityPages *cache.Cache[pageKey, *pageView]
	decisions         *reservation.Waiters          // wakes status reads waiting for a decision
	orderChanges      *wake.Waiters[checkout.Order] // wakes order reads waiting for a payment's outcome
	riverUIHandler    *riverui.Handler
	sales             *ops.Live // the console's live sale views and reports
	accessLines       sync.Pool // *[]byte: buffers access lines are written in
	requestIDs        *requestIDs
}

// Body size caps: reservations and tenants are small; a stadium's layout is
// not, and its seat map with a label and position per seat less so (Fiber's
// own BodyLimit, 4 MiB, is the ceiling).
const (
	maxSmallBody   = 64 << 10
	maxProductBody = 2 << 20
	maxSeatMapBody = 4 << 20
)

// requestTimeout bounds each API operation's database work.
const requestTimeout = 10 * time.Second

// missTTL is how long an unknown key, tenant or product is remembered as
// unknown.
const missTTL = 5 * time.Second

// New builds the API and its routes.
func New(d Deps) *Server {
	installProblemErrors()
	d.SMSDailyCap = cmp.Or(d.SMSDailyCap, 1000)
	s := &Server{Deps: d}
	s.accessLines.New = func() any { return new([]byte) }
	s.requestIDs = newRequestIDs()
	// Short TTLs: keys and secrets are looked up on every request, and a
	// revoked key or rotated secret must stop working soon.
	// Unknown keys, tenants and products are kept as misses for a while:
	// made-up credentials and ids then cost one lookup each, not one per
	// request (a key or tenant created meanwhile is random, never one
	// that was guessed at).
	notFound := func(err error) bool { return errors.Is(err, db.ErrNotFound) }
	s.keys = cache.New(keyCacheTTL, 10_000, func(ctx context.Context, key string) (tenant.KeyOwner, error) {
		return d.Tenants.LookupKey(ctx, key)
	}).KeepMisses(notFound, missTTL)
	s.tokenKeys = cache.New(keyCacheTTL, 10_000, d.Tenants.BuyerTokenKeys).KeepMisses(notFound, missTTL)
	s.keySets = tenant.NewKeySets(netguard.Guard{AllowPrivate: d.PrivateTargets}.Client(5 * time.Second))
	s.issuers = cache.New(keyCacheTTL, 10_000, func(ctx context.Context, key string) (tenant.Issuer, error) {
		issuer, audiences, _ := strings.Cut(key, "\x00")
		return d.Tenants.IssuerOf(ctx, issuer, strings.Split(audiences, "\x00"))
	}).KeepMisses(notFound, missTTL)
	s.providerTokens = cache.New(time.Minute, 100_000, s.verifyProviderToken)
	// Only immutable product fields (tenant, capacity, per-buyer limit) are
	// read from this cache; the claim transaction rereads the rest.
	s.productCache = cache.New(10*time.Second, 10_000, d.Products.GetAny).KeepMisses(notFound, missTTL)
	// A store's home page is the most-read page of an on-sale: its catalog
	// is built at most once a second per process, whatever the traffic.
	s.profiles = cache.New(10*time.Second, 10_000, func(ctx context.Context, slug string) (*profileView, error) {
		id, p, err := d.Tenants.StoreProfile(ctx, slug)
		if err != nil {
			return nil, err
		}
		return &profileView{tenantID: id, body: p, etag: etagOf(p)}, nil
	})
	s.catalogs = cache.New(time.Second, 10_000, s.loadCatalog)
	if s.Reporter == nil {
		s.Reporter = ops.NewReporter(d.Pool, "river", nil)
	}
	s.sales = ops.NewLive(s.Reporter, d.Products)
	s.live = live.NewHub(d.Pool, live.Options{Period: d.StreamPeriod, Metrics: d.Metrics, Logger: d.Logger})
	s.decisions = reservation.NewWaiters(d.Pool, d.Logger)
	s.orderChanges = checkout.NewWaiters(d.Pool, d.Logger)
	s.stopping = make(chan struct{})
	// A venue plan is rendered once per version: a stadium's is megabytes.
	s.streams = &perClient{max: d.StreamsPerClient, open: map[string]int{}}
	s.uploads = &fixedWindow{max: uploadsPerHour, window: time.Hour, counts: map[string]int{}}
	s.layouts = cache.NewSized(time.Hour, 1000, 256<<20, (*layoutView).size, s.loadLayout)
	// Bounded by bytes: a 1,000,000-number product's view, with its whole
	// bitmap, is ~300 KB; the whole views and the pages share the bound,
	// half each.
	availabilityBytes := cmp.Or(d.AvailabilityCacheBytes, 128<<20) / 2
	// A product's view is reloaded in the background once a second while
	// it is read: its readers never wait for the database.
	s.availability = cache.NewSized(time.Second, 10_000, availabilityBytes, (*availabilityView).size, s.loadAvailability).
		ServeStale(time.Second)
	s.availabilityPages = cache.NewSized(time.Minute, 100_000, availabilityBytes, (*pageView).size, s.loadAvailabilityPage)

	s.app = fiber.New(fiber.Config{
		AppName: "boxoffice",
		// huma enforces each operation's own, smaller limit with a problem
		// response; this one only stops absurd bodies early.
		BodyLimit:             4 << 20,
		DisableStartupMessage: true,
		ErrorHandler:          fiberErrorHandler(d.Logger),
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
	})
	s.app.Use(headAsGet)
	s.app.Use(recover.New(recover.Config{EnableStackTrace: true}))
	s.app.Use(s.observe)
	if tracing.Enabled(d.Tracer) {
		s.app.Use(traceRequests(tracing.Tracer(d.Tracer)))
	}
	s.app.Use(refuseUnstorableText)
	s.app.Use(s.cors)
	s.app.Use(compressResponses())

	cfg := huma.DefaultConfig("BoxOffice API", "1.0.0")
	cfg.Info.Description = "Flash-sale reservations of numbered inventory. Requests are recorded and queued " +
		"(202); read the reservation with Prefer: wait=N to learn when it is HELD or REJECTED."
	cfg.CreateHooks = nil // no $schema links in bodies: unknown fields are refused
	// huma's own docs page loads its viewer from a public CDN (blank
	// offline); ours is embedded (web/docs) and reads /openapi.json.
	cfg.DocsPath = ""
	// The document is served as OpenAPI 3.1 only (routes.go): huma's 3.0
	// downgrade keeps 3.1-only keywords, which strict 3.0 tools refuse.
	cfg.OpenAPIPath = ""
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		schemeAdmin: {Type: "http", Scheme: "bearer", Description: "The platform admin key (BOXOFFICE_ADMIN_KEY)."},
		schemeAPI:   {Type: "http", Scheme: "bearer", Description: "A tenant-admin API key (bo_...)."},
		schemeOperator: {Type: "http", Scheme: "bearer",
			Description: "A tenant's operator or tenant-admin API key (bo_...): watch, report, check in."},
		schemeBuyer: {Type: "http", Scheme: "bearer", BearerFormat: "JWT",
			Description: "A buyer JWT: HS256 with the tenant's buyerTokenSecret; claims sub, tid, exp."},
		schemeSession: {Type: "apiKey", In: "cookie", Name: sessionCookie,
			Description: "The console's session (POST /v1/console/session): it may do what the key it was opened with may; changes also need X-CSRF-Token."},
	}
	// Relative: the document describes whichever host serves it.
	cfg.Servers = []*huma.Server{{URL: "/", Description: "The server this document was read from"}}
	cfg.Tags = tags
	s.api = humafiber.New(s.app, cfg)
	s.api.OpenAPI().OnAddOperation = append(s.api.OpenAPI().OnAddOperation, completeResponses)
	s.limits = newLimits(d.RateLimits)
	s.api.UseMiddleware(func(ctx huma.Context, next func(huma.Context)) {
		c, cancel := s.requestContext(ctx.Context(), humafiber.Unwrap(ctx))
		defer cancel()
		next(huma.WithContext(ctx, c))
	}, s.anyLimit, s.ipLimit(), s.loginLimit(d.RateLimits), s.authenticate, s.buyerLimit(), s.auditTrail)

	// Ahead of huma's route for the same operation, which it hands on to
	// for all but the plain case.
	s.app.Post(strings.ReplaceAll(createPath, "{id}", ":id"), s.createFast)
	s.routes()
	fast, err := newFastCreate(s.api.OpenAPI())
	if err != nil {
		panic(err) // caught by every test that builds the API
	}
	s.fast = fast
	return s
}

// requestContext is the context an API operation runs in: bounded by
// requestTimeout, carrying the client's address (clientOf).
func (s *Server) requestContext(parent context.Context, c *fiber.Ctx) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, requestTimeout)
	return context.WithValue(ctx, clientKey{}, clientIP(c, s.RateLimits.TrustedProxies)), cancel
}

// docsPages serves the API docs page (embedded; it reads /openapi.json).
func docsPages() fiber.Handler {
	docs, _ := fs.Sub(web.Docs, "docs")
	return filesystem.New(filesystem.Config{Root: http.FS(docs), Index: "index.html", MaxAge: 300})
}

// openAPI serves the API document, as JSON or YAML, rendered once (after
// every route is registered).
func (s *Server) openAPI(format string) fiber.Handler {
	var once sync.Once
	var doc []byte
	return func(c *fiber.Ctx) error {
		once.Do(func() {
			if format == "yaml" {
				doc, _ = s.api.OpenAPI().YAML() // the document is plain data: it always encodes
				return
			}
			doc, _ = json.Marshal(s.api.OpenAPI())
		})
		c.Set(fiber.HeaderContentType, "application/openapi+"+format)
		return c.Send(doc)
	}
}

// headAsGet answers HEAD as the GET of the same path would, without the
// body (fasthttp drops it for a HEAD request): huma registers GET only. It
// is the first middleware, so the stacks of both methods line up where it
// switches from one to the other.
func headAsGet(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodHead {
		c.Method(fiber.MethodGet)
	}
	return c.Next()
}

// livez says the process is up (readyz says whether it can serve).
func livez(c *fiber.Ctx) error { return c.SendString("ok") }

// Start starts the background parts of the API (the listeners of
// decisions and of orders' changes, the River UI's caches) until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	go s.decisions.Run(ctx)
	go s.orderChanges.Run(ctx)
	go func() {
		<-ctx.Done()
		s.stopOnce.Do(func() { close(s.stopping) })
		s.live.Close()
	}()
	if s.riverUIHandler == nil {
		return nil
	}
	return s.riverUIHandler.Start(ctx)
}

// Live is the process's availability hub (the benchmark counts its queries).
func (s *Server) Live() *live.Hub { return s.live }

// App returns the Fiber app, to listen on or to test with app.Test.
func (s *Server) App() *fiber.App { return s.app }

// AvailabilityCacheBytes reports what the availability caches hold, views
// and pages, as their entries' sizes count it.
func (s *Server) AvailabilityCacheBytes() int {
	return s.availability.Bytes() + s.availabilityPages.Bytes()
}

// OpenAPI returns the generated OpenAPI document.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

// traceRequests makes a server span of each request, child of the
// caller's span when it sent a traceparent; handlers get it through the
// request's user context.
func traceRequests(tracer trace.Tracer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		carrier := tracing.Carrier{}
		for _, h := range []string{"traceparent", "tracestate"} {
			if v := c.Get(h); v != "" {
				carrier[h] = v
			}
		}
		ctx := tracing.Extract(c.UserContext(), carrier)
		ctx, span := tracer.Start(ctx, c.Method(), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", strings.Clone(c.Method())),
				attribute.String("url.path", strings.Clone(c.Path()))))
		defer span.End()
		c.SetUserContext(ctx)
		err := c.Next()
		status := c.Response().StatusCode()
		if fe := (*fiber.Error)(nil); errors.As(err, &fe) {
			status = fe.Code
		}
		route := strings.Clone(c.Route().Path)
		span.SetName(c.Method() + " " + route)
		span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return err
	}
}

func (s *Server) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		// The reason is for the operator's logs: driver errors name hosts.
		s.Logger.Warn("not ready", "error", err)
		return c.Status(fiber.StatusServiceUnavailable).JSON(
			problem(503, "NOT_READY", "not ready: database unreachable or migrations pending"), "application/problem+json")
	}
	return c.SendString("ready")
}

// availabilityView is a cached, ready-to-send availability snapshot.
type availabilityView struct {
	body       *encoded
	held, sold int
	pages      []int64 // every page's version
	etag       string
}

func (v *availabilityView) size() int { return v.body.size() + len(v.etag) + 8*len(v.pages) + 64 }

// loadAvailability reads a product's counters and page index, with the
// whole bitmap when it is served whole.
func (s *Server) loadAvailability(ctx context.Context, id uuid.UUID) (*availabilityView, error) {
	read := inventory.Get
	if n, err := s.productCache.Get(ctx, id); err == nil && n.Capacity > inventory.WholeBitmapUpTo {
		read = inventory.Index
	}
	snap, err := read(ctx, s.Pool, id)
	if err != nil {
		return nil, err
	}
	return newAvailabilityView(snap)
}
