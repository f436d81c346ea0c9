//go:build dev

// Development mode (`boxoffice dev`, what `make run` runs) is built only with
// the dev tag: it links the SQS emulator and the mail catcher, which a
// production binary has no use for.

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"image/color"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sivchari/kumo"

	"boxoffice/internal/app"
	"boxoffice/internal/atrest"
	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/internal/demo"
	"boxoffice/internal/devs3"
	"boxoffice/internal/inventory"
	"boxoffice/internal/mail"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
)

// runDev is `make run`: migrate, seed, then API and workers in one process.
func runDev(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	cfg.DevOrigins = true
	cfg.PrivateTargets = true // the demo's identity provider, if any, is on this machine
	if cfg.SMSProvider == "" {
		cfg.SMSProvider = "mail" // login codes by SMS show in the dev inbox
	}
	if cfg.AdminKey == "" {
		cfg.AdminKey = "admin_" + randomToken()
	}
	if len(cfg.WebhookSecrets) == 0 {
		cfg.WebhookSecrets = []string{"whsec_" + randomToken()}
	}
	if cfg.TicketSecret == "" {
		cfg.TicketSecret = randomToken()
	}
	if cfg.AccessTokenSecret == "" {
		cfg.AccessTokenSecret = randomToken()
	}
	if cfg.SecretsKey == nil {
		keys, err := devSecretsKey(devSecretsKeyFile)
		if err != nil {
			return err
		}
		cfg.SecretsKey = keys
	}
	inboxURL := "(BOXOFFICE_SMTP_ADDR is set: mail goes there)"
	if cfg.SMTPAddr == "" {
		sink, err := mail.NewSink("127.0.0.1:0", logger)
		if err != nil {
			return err
		}
		defer sink.Close()
		cfg.SMTPAddr = sink.Addr()
		inboxAddr := cfg.InboxAddr
		// Bound up front: a busy port (another instance's inbox) must stop
		// the start, not leave the banner pointing at someone else's mail.
		inboxLn, err := net.Listen("tcp", inboxAddr)
		if err != nil {
			return fmt.Errorf("dev inbox on %s (BOXOFFICE_INBOX_ADDR): %w", inboxAddr, err)
		}
		go func() {
			if err := sink.Serve(ctx, inboxLn); err != nil {
				logger.Warn("dev inbox stopped", "addr", inboxAddr, "error", err)
			}
		}()
		inboxURL = "http://" + inboxAddr
	}
	if cfg.PaymentProvider == "sim" && cfg.PaymentProviderURL == "" {
		url, stop, err := startPaymentSimulator(ctx, cfg, logger)
		if err != nil {
			return err
		}
		defer stop()
		cfg.PaymentProviderURL = url
	}
	// dev, and only dev, creates its database when missing.
	if err := db.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return fmt.Errorf("DATABASE_URL %s: %w", db.Redact(cfg.DatabaseURL), err)
	}
	if err := migrate(ctx, cfg, logger); err != nil {
		if errors.Is(err, atrest.ErrOpen) {
			return fmt.Errorf("%w: the dev database's secrets were sealed under another key than %s "+
				"(removed?): put that file back, or start afresh with dropdb on DATABASE_URL's database", err, devSecretsKeyFile)
		}
		return err
	}
	if cfg.QueueBackend == "sqs" && cfg.SQSQueueURL == "" && cfg.SQSEndpoint == "" {
		emulator, err := startSQSEmulator(ctx, cfg)
		if err != nil {
			return err
		}
		defer emulator.Close()
	}
	// Stores: an S3-compatible server in this process unless BOXOFFICE_S3_ENDPOINT
	// names one; stores are republished when their settings change, the
	// demo tenant's is published now, and every published store is served
	// at /s/{slug}/ and on its domains by a server of its own, on another
	// origin than the API and the console (as a CDN is in production).
	cfg.StoresURL = "http://" + cfg.StoreAddr
	if cfg.StoreAPIURL == "" {
		cfg.StoreAPIURL = "http://" + cfg.Addr
	}
	if cfg.S3Endpoint == "" {
		s3srv, err := devs3.Start()
		if err != nil {
			return err
		}
		defer s3srv.Close()
		cfg.S3Endpoint, cfg.S3Credentials = s3srv.URL, s3srv.Provider()
	}
	cfg.StoreAutoPublish = true
	a, closeDB, err := build(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	defer closeDB()
	demo, err := seedDemo(ctx, a)
	if err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}
	if err := sellOutSession(ctx, a, demo.session); err != nil {
		return err
	}
	bucket := a.StorePublisher.Bucket
	if err := bucket.Ensure(ctx); err != nil {
		return err
	}
	if err := demoPictures(ctx, bucket); err != nil {
		return err
	}
	if err := a.StorePublisher.Publish(ctx, "demo"); err != nil {
		return fmt.Errorf("publish the demo store: %w", err)
	}
	storeLn, err := listen(cfg.StoreAddr)
	if err != nil {
		return fmt.Errorf("dev stores (BOXOFFICE_STORE_ADDR): %w", err)
	}
	stores := &http.Server{Handler: &storefront.Server{Bucket: bucket, SlugOfHost: storefront.HostSlugs(a.Tenants)},
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = stores.Serve(storeLn) }()
	defer func() { _ = stores.Shutdown(context.WithoutCancel(ctx)) }()
	ln, err := listen(cfg.Addr)
	if err != nil {
		return err
	}
	mln, err := a.ListenMetrics()
	if err != nil {
		_ = ln.Close()
		return err
	}
	base := "http://" + cfg.Addr
	queues := "River (in PostgreSQL)"
	if cfg.QueueBackend == "sqs" {
		queues = fmt.Sprintf("SQS %s (dead letters: %s)", cfg.SQSQueueURL, cfg.SQSDLQURL)
		if cfg.SQSEndpoint != "" {
			// The emulator names its queues after AWS's local convention
			// (localhost:4566); requests go to the endpoint, so say where
			// it really is.
			queues = fmt.Sprintf("SQS emulator at %s: queue %s, dead letters %s", cfg.SQSEndpoint,
				path.Base(cfg.SQSQueueURL), path.Base(cfg.SQSDLQURL))
		}
	}
	fmt.Printf(`
BoxOffice dev is up.

  Store           %[16]s/s/demo/     (the demo tenant's store, on an origin of its own: open it and buy a ticket)
  Console         %[1]s/console/    (sign in with the tenant API key, the operator key or the admin key)

  API             %[1]s
  API docs        %[1]s/docs        (OpenAPI: %[1]s/openapi.json)
  Metrics         http://%[14]s/metrics
  Health          %[1]s/healthz  %[1]s/readyz
  Operations      %[1]s/v1/ops/queues   River UI %[1]s/ops/river (signed in to the console as admin, or Basic auth with the admin key)
  Queue           %[11]s
  Payments        %[12]s (simulator; methods sim_ok, sim_decline, sim_timeout_after_auth, ...)
  Dev inbox       %[13]s

  Admin key       %[2]s
  Demo tenant     %[3]s  (slug demo)
  Tenant API key  %[4]s
  Operator key    %[15]s   (watches the demo tenant's sales, read-only)
  Buyer secret    %[5]s
  Buyer token     %[6]s   (buyer "alice", 24h)
  Stadium         %[7]s  (seated, %[8]d seats)
  Raffle          %[9]s  (numbered, %[10]d numbers)
  Sold out        %[17]s  (24 seats held by demo fans for 15 minutes: its store page is the waiting list)

Try:
  curl -s -X POST %[1]s/v1/products/%[7]s/reservations \
    -H "Authorization: Bearer %[6]s" -H "Idempotency-Key: $(date +%%s%%N)" \
    -H "Content-Type: application/json" -d '{"quantity":2}'

Store API (public, for the demo tenant's store):
  curl -s %[1]s/v1/stores/demo/products
  curl -s %[1]s/v1/products/%[7]s/layout
  curl -sN %[1]s/v1/products/%[7]s/availability/stream
  curl -s -X POST %[1]s/v1/stores/demo/login -H "Content-Type: application/json" -d '{"email":"you@example.com"}'
    (the six-digit code lands in the dev inbox; SMS codes too, for {"phone":"+351912345678"})
  curl -s -X POST %[1]s/v1/stores/demo/login/verify -H "Content-Type: application/json" \
    -d '{"email":"you@example.com","code":"123456"}'

`, base, cfg.AdminKey, demo.tenantID, demo.apiKey, demo.secret, demo.buyerToken,
		demo.stadium.ID, demo.stadium.Capacity, demo.raffle.ID, demo.raffle.Capacity, queues,
		cfg.PaymentProviderURL, inboxURL, cfg.MetricsAddr, demo.operatorKey, cfg.StoresURL, demo.session.ID)

	return app.Run(ctx, append(a.APIParts(a.API(), ln), a.WorkersPart(), a.MetricsPart(mln))...)
}

func randomToken() string {
	buf := make([]byte, 24)
	_, _ = rand.Read(buf)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// startPaymentSimulator runs the payment provider simulator in this process
// on a loopback port, sending its webhooks to this process's API.
func startPaymentSimulator(ctx context.Context, cfg *config.Config, logger *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("payment simulator: %w", err)
	}
	sim := pspsim.New(pspsim.Config{
		Latency:       cfg.PSPSimLatency,
		WebhookURL:    "http://" + cfg.Addr + "/v1/webhooks/payments/sim",
		WebhookSecret: cfg.WebhookSecrets[0],
		Logger:        logger,
	})
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		_ = srv.Shutdown(context.WithoutCancel(ctx))
		sim.Close()
	}, nil
}

// runSQSEmulator is `boxoffice sqs-emulator`: the kumo SQS emulator in a
// process of its own, as the AWS service is to serve and work (the SQS
// benchmark and fault test run it so). It logs its URL and runs until
// stopped; queues are created by whoever uses it.
func runSQSEmulator(ctx context.Context, args []string) error {
	if err := noFlags("sqs-emulator", "usage: boxoffice sqs-emulator\n\nrun the SQS emulator (kumo) on a loopback port until stopped; its URL is logged\n", args); err != nil {
		return err
	}
	srv := kumo.NewServer()
	defer srv.Close()
	newLogger("info").Info("sqs emulator listening", "url", srv.URL)
	<-ctx.Done()
	return nil
}

// startSQSEmulator runs the kumo SQS emulator in this process on a loopback
// port and creates the claim queue and the events queue, each with a
// dead-letter queue and a redrive policy, pointing cfg at them.
func startSQSEmulator(ctx context.Context, cfg *config.Config) (*kumo.Server, error) {
	srv := kumo.NewServer()
	client, err := sqsqueue.NewClient(ctx, srv.URL, "us-east-1")
	if err != nil {
		srv.Close()
		return nil, err
	}
	mainURL, dlqURL, err := sqsqueue.EnsureQueues(ctx, client, "boxoffice-claims", cfg.SQSMaxReceiveCount, cfg.SQSVisibilityTimeout)
	if err != nil {
		srv.Close()
		return nil, err
	}
	eventsURL, _, err := sqsqueue.EnsureQueues(ctx, client, "boxoffice-events", cfg.SQSMaxReceiveCount, cfg.SQSVisibilityTimeout)
	if err != nil {
		srv.Close()
		return nil, err
	}
	cfg.SQSEndpoint, cfg.SQSRegion, cfg.SQSQueueURL, cfg.SQSDLQURL = srv.URL, "us-east-1", mainURL, dlqURL
	cfg.SQSEventsQueueURL = eventsURL
	return srv, nil
}

type demoData struct {
	tenantID              uuid.UUID
	apiKey, secret        string
	operatorKey           string
	buyerToken            string
	stadium, hall, raffle *product.Product
	session               *product.Product // small, sold out at each start: its waiting list
}

// devKeyLabel and devOperatorLabel mark the demo API keys dev issues at
// each start (a tenant admin's and an operator's).
const (
	devKeyLabel      = "boxoffice dev demo key"
	devOperatorLabel = "boxoffice dev operator key"
)

// seedDemo creates the demo tenant and products once; on later starts it
// reuses them, revokes the previous start's demo key and issues a fresh one.
func seedDemo(ctx context.Context, a *app.App) (*demoData, error) {
	d := &demoData{}
	id, err := a.Tenants.IDBySlug(ctx, "demo")
	switch {
	case err == nil:
		d.tenantID = id
		secrets, err := a.Tenants.BuyerTokenSecrets(ctx, id)
		if err != nil {
			return nil, err
		}
		d.secret = string(secrets[0])
		// Keys are stored hashed, so the last start's key cannot be shown
		// again: revoke it and issue a fresh one.
		if _, err := a.Tenants.RevokeLabelled(ctx, d.tenantID, devKeyLabel); err != nil {
			return nil, err
		}
		if _, d.apiKey, err = a.Tenants.CreateKey(ctx, d.tenantID, tenant.RoleTenantAdmin, devKeyLabel); err != nil {
			return nil, err
		}
	case !errors.Is(err, db.ErrNotFound):
		return nil, err
	default:
		t, err := a.Tenants.Create(ctx, tenant.CreateParams{Slug: "demo", Name: "Demo Arena",
			Domains: []string{"localhost"},
			Theme:   map[string]string{"primary": "#c2185b", "accent": "#b35f00", "replyTo": "box-office@demo-arena.example"}})
		if err != nil {
			return nil, err
		}
		// SMS codes only where a store says it sends them.
		if _, err := a.Tenants.SetStore(ctx, t.ID, tenant.StoreSettings{Name: t.Name, Theme: t.Theme, Domains: t.Domains,
			SMSCountries: []string{"+351", "+44", "+1"}}); err != nil {
			return nil, err
		}
		d.tenantID, d.apiKey, d.secret = t.ID, t.APIKey, t.BuyerTokenSecret
	}
	if _, err := a.Tenants.RevokeLabelled(ctx, d.tenantID, devOperatorLabel); err != nil {
		return nil, err
	}
	if _, d.operatorKey, err = a.Tenants.CreateKey(ctx, d.tenantID, tenant.RoleOperator, devOperatorLabel); err != nil {
		return nil, err
	}
	if d.buyerToken, err = tenant.SignBuyerToken([]byte(d.secret), d.tenantID, "alice", 24*time.Hour); err != nil {
		return nil, err
	}
	layout := demo.Stadium()
	lisbon, err := time.LoadLocation("Europe/Lisbon")
	if err != nil {
		return nil, err
	}
	// A month from now, at 21:00 in the venue's time zone.
	day := time.Now().In(lisbon).AddDate(0, 1, 0)
	night := time.Date(day.Year(), day.Month(), day.Day(), 21, 0, 0, 0, lisbon)
	venue := product.Venue{Name: "Estádio Municipal", Address: "Avenida da Liberdade 1, Lisboa",
		MapURL: "https://www.openstreetmap.org/search?query=Avenida%20da%20Liberdade%20Lisboa"}
	if d.stadium, err = demoProduct(ctx, a, d.tenantID, product.CreateParams{Slug: "demo-stadium", Name: "Demo Stadium Night",
		Kind: product.KindSeated, Capacity: layout.Number(), Layout: layout, PriceCents: 8900, FeeCents: 150, Currency: "EUR",
		Event: &product.EventParams{Slug: "demo-stadium", Name: "Demo Stadium Night", Venue: venue, TimeZone: "Europe/Lisbon",
			ImageURL:    demoPicture("demo-stadium"),
			Description: "An open-air night at the stadium: two stands, a balcony and the pitch-side rows.", EntryNote: "All ages; under 12s with an adult."},
		Dates: product.Dates{StartsAt: &night, DoorsAt: ptrTo(night.Add(-90 * time.Minute)), EndsAt: ptrTo(night.Add(150 * time.Minute))},
		// Fans may pass a ticket on until a day before doors, once; and
		// cancel their own order until two days before, for 5.00 a ticket.
		Transfers:    &product.Transfers{HoursBefore: 24, MaxTimes: 1},
		Cancellation: &product.Cancellation{HoursBefore: 48, FeeCents: 500},
	}); err != nil {
		return nil, err
	}
	draw := night.Add(-2 * time.Hour)
	if d.raffle, err = demoProduct(ctx, a, d.tenantID, product.CreateParams{Slug: "demo-raffle", Name: "Demo Raffle",
		Kind: product.KindNumbered, Capacity: 10_000, PriceCents: 500, Currency: "EUR",
		Event: &product.EventParams{Slug: "demo-raffle", Name: "Demo Raffle", Venue: venue, TimeZone: "Europe/Lisbon",
			ImageURL:    demoPicture("demo-raffle"),
			Description: "10,000 numbers, one draw on the night.", EntryNote: "18+"},
		Dates: product.Dates{StartsAt: &draw},
	}); err != nil {
		return nil, err
	}
	// A concert hall's evening, a fortnight out.
	hall := demo.Hall()
	evening := time.Date(day.Year(), day.Month(), day.Day(), 20, 0, 0, 0, lisbon).AddDate(0, 0, -14)
	if d.hall, err = demoProduct(ctx, a, d.tenantID, product.CreateParams{Slug: "demo-hall", Name: "The Four Seasons",
		Kind: product.KindSeated, Capacity: hall.Number(), Layout: hall, PriceCents: 4500, FeeCents: 100, Currency: "EUR",
		Event: &product.EventParams{Slug: "demo-hall", Name: "The Four Seasons", TimeZone: "Europe/Lisbon",
			Venue:       product.Venue{Name: "Teatro da Cidade", Address: "Rua do Teatro 12, Lisboa"},
			ImageURL:    demoPicture("demo-hall"),
			Description: "Vivaldi by candlelight: the city's chamber orchestra in the stalls' hall, with a balcony for the view.",
			EntryNote:   "Latecomers are seated at the interval."},
		Dates:        product.Dates{StartsAt: &evening, DoorsAt: ptrTo(evening.Add(-45 * time.Minute)), EndsAt: ptrTo(evening.Add(110 * time.Minute))},
		Cancellation: &product.Cancellation{HoursBefore: 48, FeeCents: 200},
	}); err != nil {
		return nil, err
	}
	// It plays three evenings in a row: a series, one card in the store
	// and a page of its dates.
	for i, slug := range []string{"demo-hall-2", "demo-hall-3"} {
		next := evening.AddDate(0, 0, i+1)
		if _, err := demoProduct(ctx, a, d.tenantID, product.CreateParams{Slug: slug, Name: "The Four Seasons",
			Kind: product.KindSeated, Capacity: hall.Number(), Layout: hall, PriceCents: 4500, FeeCents: 100, Currency: "EUR",
			EventID:      &d.hall.EventID,
			Dates:        product.Dates{StartsAt: &next, DoorsAt: ptrTo(next.Add(-45 * time.Minute)), EndsAt: ptrTo(next.Add(110 * time.Minute))},
			Cancellation: &product.Cancellation{HoursBefore: 48, FeeCents: 200},
		}); err != nil {
			return nil, err
		}
	}
	// A small room sold out to demo fans at each start, with holds of 15
	// minutes: its page is the waiting list, and the fans' seats go to
	// whoever joins it when their holds lapse.
	room := &product.Layout{Sections: []product.Section{{Name: "Room"}}}
	for r := range 4 {
		room.Sections[0].Rows = append(room.Sections[0].Rows, product.Row{Name: string(rune('A' + r)), Seats: 6})
	}
	late := evening.AddDate(0, 0, 7).Add(2 * time.Hour)
	if d.session, err = demoProduct(ctx, a, d.tenantID, product.CreateParams{Slug: "demo-session", Name: "Late Night Acoustic",
		Kind: product.KindSeated, Capacity: room.Number(), Layout: room, PriceCents: 2500, FeeCents: 100, Currency: "EUR",
		HoldSeconds: 900,
		Event: &product.EventParams{Slug: "demo-session", Name: "Late Night Acoustic", TimeZone: "Europe/Lisbon",
			Venue:       product.Venue{Name: "Sala Pequena", Address: "Rua do Teatro 12, Lisboa"},
			ImageURL:    demoPicture("demo-session"),
			Description: "Twenty-four seats, two guitars: always sold out. Join the waiting list for returned seats."},
		Dates: product.Dates{StartsAt: &late, DoorsAt: ptrTo(late.Add(-30 * time.Minute))},
	}); err != nil {
		return nil, err
	}
	return d, nil
}

// sellOutSession has demo fans ask for every free seat of the small room
// (the claim workers decide them): a sold-out event for the store to show.
func sellOutSession(ctx context.Context, a *app.App, p *product.Product) error {
	free, err := inventory.Available(ctx, a.Pool, p.ID)
	if err != nil {
		return err
	}
	start := time.Now().UnixNano()
	for i := 0; free > 0; i++ {
		n := min(int(free), p.PerBuyerLimit)
		_, err := a.Reservations.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: fmt.Sprintf("demo-fan-%d", i),
			IdempotencyKey: fmt.Sprintf("demo-sellout-%d-%d", start, i), Params: reservation.Params{Quantity: n}})
		if err != nil {
			return fmt.Errorf("sell out the demo session: %w", err)
		}
		free -= int64(n)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// demoPictures draws the demo events' pictures and puts them with the
// demo store, where the events' imageUrl (relative: the store's own
// files) finds them.
func demoPictures(ctx context.Context, bucket storefront.Bucket) error {
	for slug, kind := range map[string]string{"demo-stadium": "stadium", "demo-hall": "hall", "demo-raffle": "raffle",
		"demo-session": "hall"} {
		img, err := demo.Poster(kind, color.RGBA{0xc2, 0x18, 0x5b, 0xff}, color.RGBA{0xf2, 0xa5, 0x41, 0xff})
		if err != nil {
			return err
		}
		if err := bucket.Put(ctx, "demo", demoPicture(slug), storefront.File{Body: img, ContentType: "image/png",
			CacheControl: "public, max-age=3600"}); err != nil {
			return err
		}
	}
	return nil
}

// demoPicture is where a demo event's picture is, in the store's files.
func demoPicture(slug string) string { return "images/" + slug + ".png" }

// demoProduct creates a demo product, or finds the one an earlier start
// made; one made before products had dates gets its date and venue now.
func demoProduct(ctx context.Context, a *app.App, tenantID uuid.UUID, p product.CreateParams) (*product.Product, error) {
	p.TenantID = tenantID
	created, err := a.Products.Create(ctx, p)
	if !errors.Is(err, product.ErrSlugTaken) && !errors.Is(err, product.ErrEventSlugTaken) {
		return created, err
	}
	found, err := a.Products.GetBySlug(ctx, tenantID, p.Slug)
	if err != nil || p.Event == nil {
		// A further date of an event seeded with its first.
		return found, err
	}
	if found.ImageURL == "" && p.Event.ImageURL != "" {
		// A demo seeded before it had pictures gets them.
		if _, err := a.Products.UpdateEvent(ctx, tenantID, found.EventID, product.EventUpdate{ImageURL: &p.Event.ImageURL}); err != nil {
			return nil, err
		}
	}
	if found.StartsAt != nil {
		return found, nil
	}
	e := p.Event
	if _, err := a.Products.UpdateEvent(ctx, tenantID, found.EventID, product.EventUpdate{Description: &e.Description,
		EntryNote: &e.EntryNote, Venue: &e.Venue, TimeZone: &e.TimeZone}); err != nil {
		return nil, err
	}
	return a.Products.Update(ctx, tenantID, found.ID, product.Update{StartsAt: p.StartsAt, DoorsAt: p.DoorsAt, EndsAt: p.EndsAt,
		Transfers: p.Transfers, Cancellation: p.Cancellation})
}

// devSecretsKeyFile keeps dev's BOXOFFICE_SECRETS_KEY between runs, under the
// git-ignored .data/ of the folder dev runs in: the tenants' sealed secrets
// in the dev database must open after a restart.
const devSecretsKeyFile = ".data/secrets-key"

// devSecretsKey reads the key in path, or makes one there (readable by its
// owner only) when there is none.
func devSecretsKey(path string) (*atrest.Keyring, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: dev's own fixed path
	if errors.Is(err, os.ErrNotExist) {
		// An id of its own: a database sealed under another dev key (the
		// file removed, or another checkout's) then fails to open at
		// migrate, with the hint below, instead of passing for current.
		raw = []byte(atrest.Generate("dev-" + randomToken()[:6]))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("dev secrets key: %w", err)
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return nil, fmt.Errorf("dev secrets key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("dev secrets key: %w", err)
	}
	keys, err := atrest.Parse(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("dev secrets key in %s: %w", path, err)
	}
	return keys, nil
}
