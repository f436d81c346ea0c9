// Package config reads BoxOffice's configuration from the environment, once,
// in main. Each setting is declared once, by the tags of its Config field:
// its variable, default, bounds and doc; docs/configuration.md is generated
// from them (Markdown).
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5/pgconn"

	"boxoffice/internal/atrest"
)

// Config is the whole process configuration. Each setting is declared
// once, here, by its tags (see declare.go); docs/configuration.md is
// generated from them.
type Config struct {
	DatabaseURL        string          `section:"Database" env:"DATABASE_URL" secret:"true" default:"postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable" doc:"PostgreSQL; several hosts (host1,host2) for a failover pair, fenced (docs/failover.md); make run sets it from infra/dev/postgres.sh"`
	DBMaxConns         int             `env:"BOXOFFICE_DB_MAX_CONNS" default:"20" min:"4" doc:"database pool size"`
	DBMinConns         int             `env:"BOXOFFICE_DB_MIN_CONNS" default:"0" min:"0" doc:"sessions opened at start and kept open, at most BOXOFFICE_DB_MAX_CONNS, so that an opening's first second does not wait for new ones (0: on demand)"`
	DBLockTimeout      time.Duration   `env:"BOXOFFICE_DB_LOCK_TIMEOUT" default:"5s" min:"100ms" doc:"every session's lock_timeout, below the API's 10s request deadline: a request stuck behind a lock answers 503 PRODUCT_BUSY"`
	DBStatementTimeout time.Duration   `env:"BOXOFFICE_DB_STATEMENT_TIMEOUT" default:"30s" min:"1s" doc:"every session's statement_timeout (migrations run without it)"`
	FenceProbeInterval time.Duration   `env:"BOXOFFICE_FENCE_PROBE_INTERVAL" default:"1s" min:"100ms" doc:"how often a process asks every host of DATABASE_URL whether it accepts writes (two or more listed); two writers pause purchases"`
	SecretsKey         *atrest.Keyring `env:"BOXOFFICE_SECRETS_KEY" secret:"true" doc:"id:base64-key entries, comma-separated, the first sealing: seals tenants' buyer-token secrets and MACs login codes in the database; required by serve, work and migrate (dev keeps one in .data/secrets-key); see docs/operations.md, Secrets at rest"`

	Addr                   string        `section:"API" env:"BOXOFFICE_ADDR" default:"127.0.0.1:8080" doc:"API listen address"`
	MetricsAddr            string        `env:"BOXOFFICE_METRICS_ADDR" default:"127.0.0.1:9090" doc:"this process's Prometheus /metrics listener, apart from the public API (off: none); two processes on one host need two addresses"`
	AdminKey               string        `env:"BOXOFFICE_ADMIN_KEY" secret:"true" doc:"the platform admin's bearer key; dev generates and prints one; serve without it warns and refuses every platform-admin call"`
	PrivateTargets         bool          `env:"BOXOFFICE_ALLOW_PRIVATE_TARGETS" default:"false" doc:"let the addresses tenants name (identity providers' JWKS, webhook endpoints) be loopback, private or link-local ones, and http; dev turns it on; off, they must be public https"`
	AcceptLinger           time.Duration `env:"BOXOFFICE_ACCEPT_LINGER" default:"1ms" min:"0s" doc:"accept micro-batching: the first accept of a burst waits this long, then all are recorded in one transaction (0: one transaction each)"`
	AcceptTransactions     int           `env:"BOXOFFICE_ACCEPT_TRANSACTIONS" default:"1" min:"0" doc:"accept transactions one API process runs at once; accepts arriving meanwhile join the next batch (0: no limit)"`
	TrustedProxies         Prefixes      `env:"BOXOFFICE_TRUSTED_PROXIES" doc:"load balancers (addresses or CIDR prefixes, comma-separated) whose X-Forwarded-For names the client; none: the peer address is the client"`
	RateLimitPerIP         int           `env:"BOXOFFICE_RATE_LIMIT_IP" default:"200" min:"0" doc:"queue joins, queue polls and reservations per client address and second (0: off)"`
	RateLimitPerBuyer      int           `env:"BOXOFFICE_RATE_LIMIT_BUYER" default:"20" min:"0" doc:"queue joins, queue polls and reservations per buyer and second (0: off)"`
	RateLimitAny           int           `env:"BOXOFFICE_RATE_LIMIT_ANY" default:"300" min:"0" doc:"every API call per client (an IPv4 address or an IPv6 /64) and second, before authentication (0: off)"`
	RateLimitLogin         int           `env:"BOXOFFICE_RATE_LIMIT_LOGIN" default:"20" min:"0" doc:"passwordless-login and console sign-in calls per client address and minute (0: off)"`
	StreamsPerClient       int           `env:"BOXOFFICE_STREAMS_PER_CLIENT" default:"20" min:"0" doc:"event streams one client holds open on a process (0: no cap)"`
	StreamPeriod           time.Duration `env:"BOXOFFICE_STREAM_PERIOD" default:"250ms" min:"10ms" max:"10s" doc:"how often each API process asks whether a watched product's availability moved (one primary-key read a product, whatever the watchers): a seat taken reaches open maps within about this"`
	LoginChallengeBits     int           `env:"BOXOFFICE_LOGIN_CHALLENGE_BITS" default:"14" min:"0" max:"30" doc:"proof of work (leading zero bits, as the waiting room's) each login code asked for costs (0: none)"`
	SMSDailyCap            int           `env:"BOXOFFICE_SMS_DAILY_CAP" default:"1000" min:"0" doc:"SMS login codes one store sends a day (UTC); SMS go only to the store's smsCountries"`
	TenantMaxProducts      int           `env:"BOXOFFICE_TENANT_MAX_PRODUCTS" default:"1000" min:"0" doc:"quota of tenants without one of their own: products"`
	TenantMaxCapacity      int           `env:"BOXOFFICE_TENANT_MAX_CAPACITY" default:"20000000" min:"0" doc:"quota of tenants without one of their own: numbers in all their products"`
	AvailabilityCacheBytes int           `env:"BOXOFFICE_AVAILABILITY_CACHE_BYTES" default:"134217728" min:"1048576" doc:"bound of the API's availability caches, half for the products' views and half for their bitmap pages (128 MiB: every page of ten 10,000,000-number products takes about 43 MiB); expired and then oldest entries are evicted"`
	ConsoleIdle            time.Duration `env:"BOXOFFICE_CONSOLE_IDLE" default:"30m" min:"1s" doc:"a console session ends after this long without a request"`
	ConsoleMaxAge          time.Duration `env:"BOXOFFICE_CONSOLE_MAX_AGE" default:"12h" doc:"a console session ends this long after sign-in, whatever the use (at least BOXOFFICE_CONSOLE_IDLE)"`
	ClaimInRequest         bool          `env:"BOXOFFICE_CLAIM_IN_REQUEST" default:"false" doc:"decide each reservation in the request, one transaction each, without the queue: the synchronous design the burst benchmark compares against; not for production"`

	Workers             int           `section:"Claims and periodic jobs" env:"BOXOFFICE_WORKERS" default:"8" min:"1" max:"1000" doc:"claim jobs (products) drained at once per process"`
	ClaimBatchSize      int           `env:"BOXOFFICE_CLAIM_BATCH" default:"1000" min:"1" max:"10000" doc:"requests decided per claim transaction, at most"`
	ClaimRate           float64       `env:"BOXOFFICE_CLAIM_RATE" default:"0" min:"0" doc:"numbers claimed per second by this process, at most (0: no cap)"`
	ClaimRatePerProduct float64       `env:"BOXOFFICE_CLAIM_RATE_PER_PRODUCT" default:"0" min:"0" doc:"numbers claimed per second per product, at most (0: no cap)"`
	TenantClaims        int           `env:"BOXOFFICE_TENANT_CLAIMS" default:"0" min:"0" doc:"one tenant's claim transactions running at once across the fleet, at most: about half the database's cores on a shared deployment (0: no cap)"`
	SweepInterval       time.Duration `env:"BOXOFFICE_SWEEP_INTERVAL" default:"2s" min:"100ms" doc:"how often expired holds are swept"`
	WaitlistInterval    time.Duration `env:"BOXOFFICE_WAITLIST_INTERVAL" default:"1s" min:"100ms" doc:"how often numbers that came back are offered to the waiting lists, and offers that ran out are ended"`
	OfferTTL            time.Duration `env:"BOXOFFICE_OFFER_TTL" default:"15m" min:"10s" max:"24h" doc:"how long a waiting-list offer lasts: the time the next in line has to reserve the numbers offered"`
	AuditInterval       time.Duration `env:"BOXOFFICE_AUDIT_INTERVAL" default:"1m" min:"1s" doc:"how often the invariants are audited"`
	RequeueAfter        time.Duration `env:"BOXOFFICE_REQUEUE_AFTER" default:"30s" min:"1s" doc:"how long a published request may stay QUEUED beyond its expected delivery (with SQS: visibility timeout × receives) before the repair job publishes it again"`
	RepublishAfter      time.Duration `env:"BOXOFFICE_REPUBLISH_AFTER" default:"10s" min:"1s" doc:"a committed request still unpublished this long is published by the repair job (SQS)"`

	QueueBackend         string        `section:"Queues" env:"BOXOFFICE_QUEUE_BACKEND" old:"QUEUE_BACKEND" default:"river" enum:"river|sqs" doc:"river (jobs in PostgreSQL) or sqs"`
	SQSQueueURL          string        `env:"BOXOFFICE_SQS_QUEUE_URL" old:"SQS_QUEUE_URL" doc:"the claim queue (required by serve and work with sqs; dev creates it in the emulator)"`
	SQSDLQURL            string        `env:"BOXOFFICE_SQS_DLQ_URL" old:"SQS_DLQ_URL" doc:"the claim queue's dead-letter queue (as BOXOFFICE_SQS_QUEUE_URL)"`
	SQSEventsQueueURL    string        `env:"BOXOFFICE_SQS_EVENTS_QUEUE_URL" old:"SQS_EVENTS_QUEUE_URL" doc:"with sqs, the queue the outbox relay publishes events to (dev creates it); none: River relays them"`
	SQSEndpoint          string        `env:"BOXOFFICE_SQS_ENDPOINT" old:"SQS_ENDPOINT" doc:"SQS endpoint override, e.g. an emulator, with static dummy credentials; none: AWS (dev starts the in-process emulator when neither this nor the queue URL is set)"`
	SQSRegion            string        `env:"AWS_REGION" doc:"the AWS region (the SDK's own variable; the rest of the AWS credential chain applies too); none: the AWS configuration's, else us-east-1"`
	SQSMaxReceiveCount   int           `env:"BOXOFFICE_SQS_MAX_RECEIVE_COUNT" old:"SQS_MAX_RECEIVE_COUNT" default:"5" min:"1" max:"1000" doc:"the redrive policy's maxReceiveCount (keep equal to the queue's)"`
	SQSVisibilityTimeout time.Duration `env:"BOXOFFICE_SQS_VISIBILITY_TIMEOUT" old:"SQS_VISIBILITY_TIMEOUT" default:"30s" min:"1s" max:"12h" doc:"visibility timeout of received messages (extended while a batch runs)"`
	SQSWaitTime          time.Duration `env:"BOXOFFICE_SQS_WAIT_TIME" old:"SQS_WAIT_TIME" default:"20s" min:"0s" max:"20s" doc:"long-poll wait"`
	SQSPollers           int           `env:"BOXOFFICE_SQS_POLLERS" old:"SQS_POLLERS" default:"4" min:"1" max:"100" doc:"concurrent receive loops of 10 messages each"`

	PaymentProvider     string        `section:"Payments and tickets" env:"BOXOFFICE_PAYMENT_PROVIDER" old:"PAYMENT_PROVIDER" default:"sim" enum:"sim|stripe" doc:"sim (the simulator, boxoffice psp-sim) or stripe"`
	PaymentProviderURL  string        `env:"BOXOFFICE_PSP_SIM_URL" old:"PSP_SIM_URL" doc:"the payment simulator's address; none: dev starts one in process, serve and work run without checkout"`
	StripeSecretKey     string        `env:"BOXOFFICE_STRIPE_SECRET_KEY" old:"STRIPE_SECRET_KEY" secret:"true" doc:"the Stripe adapter's key (required with stripe); webhooks at /v1/webhooks/payments/stripe are verified with BOXOFFICE_WEBHOOK_SECRETS"`
	StripeAPIURL        string        `env:"BOXOFFICE_STRIPE_API_URL" old:"STRIPE_API_URL" doc:"Stripe's API address; point it at stripe-mock to try request shapes locally (none: Stripe's)"`
	RehearsalPSPURL     string        `env:"BOXOFFICE_REHEARSAL_PSP_URL" old:"REHEARSAL_PSP_URL" doc:"the payment simulator rehearsals pay with, never the real provider; none: BOXOFFICE_PSP_SIM_URL when the simulator is the provider, and with Stripe rehearsals run without payments"`
	PaymentTimeout      time.Duration `env:"BOXOFFICE_PAYMENT_TIMEOUT" old:"PAYMENT_TIMEOUT" default:"10s" min:"100ms" doc:"bound on each provider call (a call that runs out has an unknown outcome)"`
	PaymentWorkers      int           `env:"BOXOFFICE_PAYMENT_WORKERS" default:"50" min:"1" doc:"provider calls in flight at most (Little's law: orders a second × seconds a call × 2)"`
	PaymentResolveAfter time.Duration `env:"BOXOFFICE_PAYMENT_RESOLVE_AFTER" default:"1m" min:"1ms" doc:"how long a payment stays pending or unknown before the reconciler asks the provider"`
	PauseAfterUnknown   int           `env:"BOXOFFICE_PAUSE_AFTER_UNKNOWN" default:"50" min:"1" doc:"unresolved payment outcomes that pause checkout"`
	CheckoutGrace       time.Duration `env:"BOXOFFICE_CHECKOUT_GRACE" default:"2m" min:"0s" doc:"the one extension of a hold when checkout starts (0: none)"`
	WebhookSecrets      []string      `env:"BOXOFFICE_WEBHOOK_SECRETS" secret:"true" doc:"comma-separated secrets that verify provider webhooks; list old and new during a rotation (dev generates one)"`
	TicketSecret        string        `env:"BOXOFFICE_TICKET_SECRET" secret:"true" doc:"signs ticket codes, derived from it whenever shown (never stored); keep it stable (dev generates one: tickets then verify only in that process)"`

	WebhookTimeout      time.Duration `section:"Webhooks to tenants" env:"BOXOFFICE_WEBHOOK_TIMEOUT" default:"10s" min:"1s" max:"1m" doc:"how long one delivery attempt waits for a tenant's endpoint to answer"`
	WebhookFirstRetry   time.Duration `env:"BOXOFFICE_WEBHOOK_FIRST_RETRY" default:"5s" min:"10ms" max:"1h" doc:"the wait before a failed delivery's first retry; later waits grow from it (×6, ×24, ×120 … ×5760: with 5s, 11 attempts over about 24 h)"`
	WebhookDisableAfter time.Duration `env:"BOXOFFICE_WEBHOOK_DISABLE_AFTER" default:"24h" min:"1s" doc:"an endpoint whose every attempt has failed for this long is disabled, and its alert address mailed"`

	AccessTokenSecret       string        `section:"Waiting room" env:"BOXOFFICE_ACCESS_TOKEN_SECRET" secret:"true" doc:"signs waiting-room queue and access tokens, shared by every API process; none: the waiting room is off (dev generates one)"`
	AdmissionSlowClaims     time.Duration `env:"BOXOFFICE_ADMISSION_SLOW_CLAIMS" default:"5s" doc:"admission halves while a product's oldest queued request is older than this"`
	AdmissionPaymentTrouble int           `env:"BOXOFFICE_ADMISSION_PAYMENT_TROUBLE" default:"10" doc:"admission halves while this many payment outcomes are unresolved"`

	SMTPAddr         string `section:"Mail and SMS" env:"BOXOFFICE_SMTP_ADDR" old:"SMTP_ADDR" doc:"the SMTP server tickets and login codes are mailed through; none: no mail (dev runs its own catcher)"`
	SMTPUsername     string `env:"BOXOFFICE_SMTP_USERNAME" doc:"the login at the SMTP relay (SES, Postmark, SendGrid: their SMTP credentials); none: no login"`
	SMTPPassword     string `env:"BOXOFFICE_SMTP_PASSWORD" secret:"true" doc:"the password of BOXOFFICE_SMTP_USERNAME"`
	SMTPTLS          string `env:"BOXOFFICE_SMTP_TLS" default:"opportunistic" enum:"starttls|tls|opportunistic|none" doc:"how the SMTP connection is secured: starttls (insist on STARTTLS, port 587), tls (TLS from the start, port 465), opportunistic (STARTTLS when the server offers it) or none; a login is only sent over TLS"`
	MailFrom         string `env:"BOXOFFICE_MAIL_FROM" old:"MAIL_FROM" default:"tickets@boxoffice.local" doc:"the sender of BoxOffice's mail"`
	SMSProvider      string `env:"BOXOFFICE_SMS_PROVIDER" old:"SMS_PROVIDER" enum:"|twilio|mail" doc:"how login codes go by SMS: twilio, mail (every SMS mailed through BOXOFFICE_SMTP_ADDR; dev sets it) or none"`
	TwilioAccountSID string `env:"BOXOFFICE_TWILIO_ACCOUNT_SID" old:"TWILIO_ACCOUNT_SID" doc:"Twilio's account (with twilio)"`
	TwilioAuthToken  string `env:"BOXOFFICE_TWILIO_AUTH_TOKEN" old:"TWILIO_AUTH_TOKEN" secret:"true" doc:"Twilio's credential (with twilio)"`
	TwilioFrom       string `env:"BOXOFFICE_TWILIO_FROM" old:"TWILIO_FROM" doc:"the number SMS come from (with twilio)"`
	TwilioAPIURL     string `env:"BOXOFFICE_TWILIO_API_URL" old:"TWILIO_API_URL" doc:"Twilio's API address (none: https://api.twilio.com)"`

	StoreBucket      string `section:"Stores" env:"BOXOFFICE_STORE_BUCKET" old:"STORE_BUCKET" default:"boxoffice-stores" doc:"the S3 bucket stores are published to, each tenant's under its slug"`
	S3Endpoint       string `env:"BOXOFFICE_S3_ENDPOINT" old:"S3_ENDPOINT" doc:"an S3-compatible server's address (none: AWS; dev runs one in process that accepts only requests signed with the credentials it mints)"`
	StoreAutoPublish bool   `env:"BOXOFFICE_STORE_AUTO_PUBLISH" old:"STORE_AUTO_PUBLISH" default:"false" doc:"republish a tenant's store (a River job on the work processes) when its settings change; dev turns it on"`
	StoreAPIURL      string `env:"BOXOFFICE_STORE_API_URL" old:"STORE_API_URL" doc:"the API address built into stores (none: the store's own origin; dev: its API)"`
	StoresURL        string `env:"BOXOFFICE_STORES_URL" doc:"where stores are served by path (/s/{slug}/), shown in the publish answer (none: a CDN's, which the API cannot know; dev: its store server)"`
	StoreStripeKey   string `env:"BOXOFFICE_STORE_STRIPE_KEY" old:"STORE_STRIPE_KEY" doc:"the Stripe publishable key built into stores with stripe (card entry with Stripe.js)"`

	StoreAddr     string        `section:"boxoffice dev only" env:"BOXOFFICE_STORE_ADDR" default:"127.0.0.1:8081" doc:"where dev serves the published stores, on an origin of their own apart from the API's and the console's"`
	InboxAddr     string        `env:"BOXOFFICE_INBOX_ADDR" default:"127.0.0.1:8025" doc:"where dev serves its mail catcher's inbox"`
	PSPSimLatency time.Duration `env:"BOXOFFICE_PSP_SIM_LATENCY" old:"PSP_SIM_LATENCY" default:"300ms" min:"0s" doc:"the in-process payment simulator's latency per call"`

	LogLevel   string `section:"Diagnostics" env:"BOXOFFICE_LOG_LEVEL" default:"info" enum:"debug|info|warn|error" doc:"JSON logs on stderr from this level"`
	AccessLog  bool   `env:"BOXOFFICE_ACCESS_LOG" default:"true" doc:"one info line per API request: method, route template, status, duration, bytes, request id, trace id, tenant"`
	CPUProfile string `env:"BOXOFFICE_CPUPROFILE" doc:"a file the process writes its CPU profile to when it exits (the burst benchmark profiles serve and work so)"`
	GCPercent  int    `env:"BOXOFFICE_GC_PERCENT" default:"400" min:"25" max:"10000" doc:"how far the heap grows past its live part before Go collects, in percent (Go's GOGC, which wins when set): the processes' live heaps are small and an opening allocates fast, so collecting a quarter as often as Go's 100 costs a few hundred MB at most; with a container memory limit set GOMEMLIMIT too"`

	// Tracing exports OpenTelemetry traces over OTLP/HTTP: on when
	// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
	// set and OTEL_SDK_DISABLED is not true; the exporter reads the other
	// OTEL_* variables itself.
	Tracing bool
	// S3Credentials, when set, are what S3 clients sign with instead of
	// the standard AWS chain's: dev's in-process S3 accepts only its own.
	// Set by dev.
	S3Credentials aws.CredentialsProvider
	// DevOrigins lets pages on http://localhost and http://127.0.0.1 call
	// the API from a browser (CORS), and the console's session cookie goes
	// without Secure (dev serves plain http). Set by dev.
	DevOrigins bool
	// Warnings are the old variable names the environment used, for the
	// process to log once it has a logger.
	Warnings []string
}

// Prefixes are addresses or CIDR prefixes, read comma-separated (an
// address is the prefix of its full length).
type Prefixes []netip.Prefix

// UnmarshalText reads a comma-separated list.
func (p *Prefixes) UnmarshalText(b []byte) error {
	*p = nil
	for part := range strings.SplitSeq(string(b), ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		prefix, err := parsePrefix(part)
		if err != nil {
			return err
		}
		*p = append(*p, prefix)
	}
	return nil
}

// Bench is the benchmarks' configuration.
type Bench struct {
	// DatabaseURL is the benchmark database. BENCH_DATABASE_URL; default
	// postgres://postgres@127.0.0.1:5432/boxoffice_bench?sslmode=disable
	// (created when missing).
	DatabaseURL string
	// Keep keeps the benchmark's schema for inspection. BENCH_KEEP=1.
	Keep bool
}

// BenchFromEnv reads the benchmarks' configuration.
func BenchFromEnv() Bench {
	return Bench{DatabaseURL: getenvOr("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/boxoffice_bench?sslmode=disable"),
		Keep: os.Getenv("BENCH_KEEP") != ""}
}

// TestDatabaseURL is the tests' database (TEST_DATABASE_URL, set by `make
// test`), or def when unset.
func TestDatabaseURL(def string) string { return getenvOr("TEST_DATABASE_URL", def) }

// WebhookSecret is the first of BOXOFFICE_WEBHOOK_SECRETS, or "": what the
// stand-alone payment simulator signs its events with unless told otherwise.
func WebhookSecret() string {
	var c Config
	_, _ = read(&c, osEnv()) // only this setting is wanted: others' errors are the processes' to report
	if len(c.WebhookSecrets) > 0 {
		return c.WebhookSecrets[0]
	}
	return ""
}

// ChromiumPath is the browser the store's browser tests drive
// (BOXOFFICE_CHROMIUM, set by `make test`), or "" to look for one.
func ChromiumPath() string { return os.Getenv("BOXOFFICE_CHROMIUM") }

// AuditTools is the folder of the pinned Lighthouse and axe-core
// (BOXOFFICE_AUDIT_TOOLS: what infra/dev/audit.sh prints, set by `make
// test`), or "" when the audits are not to run.
func AuditTools() string { return os.Getenv("BOXOFFICE_AUDIT_TOOLS") }

// StripeMock is the stripe-mock binary the Stripe adapter's request shapes
// are checked against (BOXOFFICE_STRIPE_MOCK, set by `make test`), or "" to
// look for one.
func StripeMock() string { return os.Getenv("BOXOFFICE_STRIPE_MOCK") }

// PostgresBinDir is where the fault harness finds PostgreSQL's server
// binaries (BOXOFFICE_PG_BIN, set by `make test`), or "" to search for them.
func PostgresBinDir() string { return os.Getenv("BOXOFFICE_PG_BIN") }

// RedeliveryWindow is how long a published request may stay QUEUED before
// the repair job publishes it again: with SQS every delivery the redrive
// policy allows may time out first.
func (c *Config) RedeliveryWindow() time.Duration {
	if c.QueueBackend == "sqs" {
		return time.Duration(c.SQSMaxReceiveCount)*c.SQSVisibilityTimeout + c.RequeueAfter
	}
	return c.RequeueAfter
}

// DefaultDatabaseURL is used when DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable"

// FromEnv reads the configuration from the environment and validates it.
func FromEnv() (*Config, error) { return load(osEnv()) }

// Default is the configuration an empty environment gives: what the test
// fixtures and benchmarks start from before setting what they need.
func Default() *Config {
	c, err := load(env{getenv: func(string) string { return "" }, readFile: os.ReadFile})
	if err != nil {
		panic("config: the defaults do not validate: " + err.Error()) // a bug, caught by the tests
	}
	return c
}

// load reads the configuration through e and validates it.
func load(e env) (*Config, error) {
	c := &Config{}
	warnings, err := read(c, e)
	if err != nil {
		return nil, err
	}
	c.Warnings = warnings
	c.StoreAPIURL = strings.TrimSuffix(c.StoreAPIURL, "/")
	c.StoresURL = strings.TrimSuffix(c.StoresURL, "/")
	c.Tracing = (e.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || e.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") &&
		!strings.EqualFold(e.getenv("OTEL_SDK_DISABLED"), "true")
	return c, c.Validate()
}

// Validate reports configuration that cannot work: the rules that tie
// settings together (each setting's own bounds are in its declaration).
func (c *Config) Validate() error {
	var errs []error
	if c.DBMinConns > c.DBMaxConns {
		errs = append(errs, errors.New("BOXOFFICE_DB_MIN_CONNS must be at most BOXOFFICE_DB_MAX_CONNS"))
	}
	if c.DBLockTimeout >= 10*time.Second {
		errs = append(errs, errors.New("BOXOFFICE_DB_LOCK_TIMEOUT must be below the API's 10s request deadline"))
	}
	if c.ConsoleMaxAge < c.ConsoleIdle {
		errs = append(errs, errors.New("BOXOFFICE_CONSOLE_MAX_AGE must be at least BOXOFFICE_CONSOLE_IDLE"))
	}
	switch c.SMSProvider {
	case "twilio":
		if c.TwilioAccountSID == "" || c.TwilioAuthToken == "" || c.TwilioFrom == "" {
			errs = append(errs, errors.New("BOXOFFICE_SMS_PROVIDER=twilio needs BOXOFFICE_TWILIO_ACCOUNT_SID, BOXOFFICE_TWILIO_AUTH_TOKEN and BOXOFFICE_TWILIO_FROM"))
		}
	case "mail":
		if c.SMTPAddr == "" {
			errs = append(errs, errors.New("BOXOFFICE_SMS_PROVIDER=mail needs BOXOFFICE_SMTP_ADDR"))
		}
	}
	switch c.PaymentProvider {
	case "sim":
		if c.PaymentProviderURL != "" && (len(c.WebhookSecrets) == 0 || c.TicketSecret == "") {
			errs = append(errs, errors.New("with BOXOFFICE_PSP_SIM_URL set, BOXOFFICE_WEBHOOK_SECRETS and BOXOFFICE_TICKET_SECRET are required"))
		}
	case "stripe":
		if c.StripeSecretKey == "" || len(c.WebhookSecrets) == 0 || c.TicketSecret == "" {
			errs = append(errs, errors.New("BOXOFFICE_PAYMENT_PROVIDER=stripe needs BOXOFFICE_STRIPE_SECRET_KEY, BOXOFFICE_WEBHOOK_SECRETS and BOXOFFICE_TICKET_SECRET"))
		}
	}
	if err := checkDatabaseURL(c.DatabaseURL); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func getenvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parsePrefix reads an address (a prefix of its full length) or a CIDR prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// checkDatabaseURL catches a malformed DATABASE_URL at start, naming the
// variable (pgx's own message, "invalid configuration parameter name", does
// not say where the mistake is).
func checkDatabaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("DATABASE_URL is not a URL: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("DATABASE_URL %s: the scheme must be postgres:// or postgresql://, not %q", u.Redacted(), u.Scheme+"://")
	}
	if u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return fmt.Errorf("DATABASE_URL %s: needs a host and a database name (postgres://user@host:5432/name)", u.Redacted())
	}
	if _, err := pgconn.ParseConfig(raw); err != nil {
		return fmt.Errorf("DATABASE_URL %s: %w", u.Redacted(), err)
	}
	return nil
}
