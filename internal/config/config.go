// Package config reads BoxOffice's configuration from the environment, once,
// in main. Every field is documented with its variable and default; README
// lists them too.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5/pgconn"

	"boxoffice/internal/atrest"
)

// Config is the whole process configuration.
type Config struct {
	// DatabaseURL is the PostgreSQL URL. DATABASE_URL; default
	// postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable.
	DatabaseURL string
	// Addr is the API listen address. BOXOFFICE_ADDR; default 127.0.0.1:8080.
	Addr string
	// MetricsAddr is where this process serves Prometheus metrics at
	// /metrics, apart from the public API (product-labelled series must not
	// leak to the public). BOXOFFICE_METRICS_ADDR; default 127.0.0.1:9090;
	// "off" serves none. Two processes on one host need two addresses.
	MetricsAddr string
	// AdminKey is the platform admin bearer key. BOXOFFICE_ADMIN_KEY; no
	// default (`dev` generates and prints one; without one `serve` warns at
	// start and refuses every platform-admin call).
	AdminKey string
	// Workers is how many claim jobs (products) are drained at once per
	// process. BOXOFFICE_WORKERS; default 8.
	Workers int
	// ClaimBatchSize is how many requests one claim transaction decides at
	// most. BOXOFFICE_CLAIM_BATCH; default 1000.
	ClaimBatchSize int
	// AcceptLinger coalesces concurrent reservation accepts into one
	// transaction: the first of a burst waits this long for company.
	// BOXOFFICE_ACCEPT_LINGER; default 1ms; 0 records each in its own.
	AcceptLinger time.Duration
	// AcceptTransactions is how many accept transactions one API process
	// runs at once; accepts arriving meanwhile wait and form the next, so
	// under load batches grow instead of multiplying.
	// BOXOFFICE_ACCEPT_TRANSACTIONS; default 1; 0 is no limit.
	AcceptTransactions int
	// DBMaxConns caps the database pool. BOXOFFICE_DB_MAX_CONNS; default 20.
	DBMaxConns int
	// DBMinConns is how many of the pool's connections are opened at start
	// and kept open, so that an opening's first seconds do not wait for
	// new database sessions. BOXOFFICE_DB_MIN_CONNS; default 0 (opened on
	// demand); at most BOXOFFICE_DB_MAX_CONNS.
	DBMinConns int
	// DBLockTimeout bounds every lock wait of the process's sessions
	// (lock_timeout): below the API's 10 s request deadline, so a request
	// stuck behind a lock answers 503 PRODUCT_BUSY instead of timing out.
	// BOXOFFICE_DB_LOCK_TIMEOUT; default 5s.
	DBLockTimeout time.Duration
	// DBStatementTimeout bounds every statement of the process's sessions
	// (statement_timeout; migrations run without it).
	// BOXOFFICE_DB_STATEMENT_TIMEOUT; default 30s.
	DBStatementTimeout time.Duration
	// FenceProbeInterval is how often a process asks every host of
	// DATABASE_URL whether it accepts writes (with more than one host
	// listed); two writers pause purchases. BOXOFFICE_FENCE_PROBE_INTERVAL;
	// default 1s.
	FenceProbeInterval time.Duration
	// SweepInterval is how often expired holds are swept.
	// BOXOFFICE_SWEEP_INTERVAL; default 2s.
	SweepInterval time.Duration
	// AuditInterval is how often the invariant auditor runs.
	// BOXOFFICE_AUDIT_INTERVAL; default 1m.
	AuditInterval time.Duration
	// RequeueAfter is how long a published request may stay QUEUED beyond its
	// expected delivery (with SQS: visibility timeout × max receives) before
	// the repair job publishes it again. BOXOFFICE_REQUEUE_AFTER; default 30s.
	RequeueAfter time.Duration
	// RepublishAfter is how long a committed request may stay unpublished
	// (SQS) before the repair job publishes it. BOXOFFICE_REPUBLISH_AFTER;
	// default 10s.
	RepublishAfter time.Duration
	// ClaimRate caps numbers claimed per second by this process, 0 for no
	// cap. BOXOFFICE_CLAIM_RATE; default 0.
	ClaimRate float64
	// ClaimRatePerProduct caps numbers claimed per second per product, 0 for
	// no cap. BOXOFFICE_CLAIM_RATE_PER_PRODUCT; default 0.
	ClaimRatePerProduct float64
	// TenantClaims caps one tenant's claim transactions running at once
	// across the fleet, 0 for no cap: one tenant's on-sale of many products
	// cannot take the database from another's. About half the database's
	// cores. BOXOFFICE_TENANT_CLAIMS; default 0.
	TenantClaims int

	// QueueBackend is river or sqs. QUEUE_BACKEND; default river.
	QueueBackend string
	// SQSEndpoint overrides the SQS endpoint (an emulator). SQS_ENDPOINT;
	// default none (AWS). With QUEUE_BACKEND=sqs, `dev` starts the in-process
	// emulator when neither this nor SQS_QUEUE_URL is set.
	SQSEndpoint string
	// SQSRegion is the AWS region. AWS_REGION (the SDK's own variable);
	// default from the AWS configuration, else us-east-1.
	SQSRegion string
	// SQSQueueURL and SQSDLQURL are the main and dead-letter queues.
	// SQS_QUEUE_URL, SQS_DLQ_URL; required with QUEUE_BACKEND=sqs except in dev.
	SQSQueueURL string
	SQSDLQURL   string
	// SQSEventsQueueURL is where the outbox relay publishes events with the
	// SQS backend. SQS_EVENTS_QUEUE_URL; default none (River relays them).
	SQSEventsQueueURL string
	// SQSMaxReceiveCount is the redrive policy's maxReceiveCount.
	// SQS_MAX_RECEIVE_COUNT; default 5.
	SQSMaxReceiveCount int
	// SQSVisibilityTimeout is the consumer's visibility timeout.
	// SQS_VISIBILITY_TIMEOUT; default 30s.
	SQSVisibilityTimeout time.Duration
	// SQSWaitTime is the long-poll wait. SQS_WAIT_TIME; default 20s (max).
	SQSWaitTime time.Duration
	// SQSPollers is how many receive loops run. SQS_POLLERS; default 4.
	SQSPollers int

	// PaymentProvider is sim or stripe. PAYMENT_PROVIDER; default sim.
	PaymentProvider string
	// StripeSecretKey and StripeAPIURL configure the Stripe adapter.
	// STRIPE_SECRET_KEY (required with stripe), STRIPE_API_URL (default
	// Stripe's; point it at stripe-mock to try request shapes).
	StripeSecretKey string
	StripeAPIURL    string
	// RehearsalPSPURL is the payment simulator rehearsals pay with (a
	// `boxoffice psp-sim`): never the real provider. REHEARSAL_PSP_URL;
	// default: PSP_SIM_URL when the simulator is the provider; with Stripe
	// and none set, rehearsals run without payments.
	RehearsalPSPURL string
	// PaymentProviderURL is the payment provider simulator's address.
	// PSP_SIM_URL; default none: `dev` starts the simulator in-process,
	// `serve`/`work` then run without checkout.
	PaymentProviderURL string
	// PaymentTimeout bounds each provider call; a call that runs out has an
	// unknown outcome. PAYMENT_TIMEOUT; default 10s.
	PaymentTimeout time.Duration
	// PaymentWorkers is how many provider calls run at once.
	// BOXOFFICE_PAYMENT_WORKERS; default 50.
	PaymentWorkers int
	// WebhookSecrets verify provider webhooks, comma-separated (several
	// during a rotation). BOXOFFICE_WEBHOOK_SECRETS; `dev` generates one.
	WebhookSecrets []string
	// AccessTokenSecret signs waiting-room queue and access tokens; every
	// API process must share it. BOXOFFICE_ACCESS_TOKEN_SECRET; `dev`
	// generates one; without it the waiting room is off.
	AccessTokenSecret string
	// RateLimitPerIP and RateLimitPerBuyer cap queue joins, queue polls and
	// reservations per second. BOXOFFICE_RATE_LIMIT_IP (default 200) and
	// BOXOFFICE_RATE_LIMIT_BUYER (default 20); 0 turns one off.
	RateLimitPerIP    int
	RateLimitPerBuyer int
	// RateLimitAny caps every API call per client (an IPv4 address or an
	// IPv6 /64) and second, before authentication. BOXOFFICE_RATE_LIMIT_ANY;
	// default 300; 0 turns it off.
	RateLimitAny int
	// StreamsPerClient caps the event streams one client holds open on a
	// process. BOXOFFICE_STREAMS_PER_CLIENT; default 20; 0: no cap.
	StreamsPerClient int
	// RateLimitLogin caps passwordless-login calls per client IP and
	// minute. BOXOFFICE_RATE_LIMIT_LOGIN; default 20; 0 turns it off.
	RateLimitLogin int
	// LoginChallengeBits is the proof of work (leading zero bits, as the
	// waiting room's) a store's login start must carry: it prices every
	// code asked for. BOXOFFICE_LOGIN_CHALLENGE_BITS; default 14; 0 = none.
	LoginChallengeBits int
	// SMSDailyCap caps the SMS login codes one tenant's store sends a day.
	// BOXOFFICE_SMS_DAILY_CAP; default 1000.
	SMSDailyCap int
	// TrustedProxies are the load balancers whose X-Forwarded-For names the
	// client (for the per-IP limit), as addresses or CIDR prefixes,
	// comma-separated. BOXOFFICE_TRUSTED_PROXIES; default none: the peer
	// address is the client.
	TrustedProxies []netip.Prefix
	// AdmissionSlowClaims and AdmissionPaymentTrouble are the waiting room's
	// feedback thresholds: admission halves while the product's oldest
	// queued request is older, or this many payment outcomes are unresolved.
	// BOXOFFICE_ADMISSION_SLOW_CLAIMS (default 5s),
	// BOXOFFICE_ADMISSION_PAYMENT_TROUBLE (default 10).
	AdmissionSlowClaims     time.Duration
	AdmissionPaymentTrouble int
	// TicketSecret signs ticket codes. BOXOFFICE_TICKET_SECRET; `dev`
	// generates one (tickets then verify only in that process).
	TicketSecret string
	// SecretsKey seals the tenants' buyer-token secrets and MACs login
	// codes in the database: comma-separated id:base64-key entries (32
	// random bytes each), the first sealing, all opening, so it can be
	// rotated. BOXOFFICE_SECRETS_KEY; required by serve, work and migrate;
	// `dev` keeps one in .data/secrets-key.
	SecretsKey *atrest.Keyring
	// CheckoutGrace extends a hold once when checkout starts.
	// BOXOFFICE_CHECKOUT_GRACE; default 2m; 0 means no extension.
	CheckoutGrace time.Duration
	// PauseAfterUnknown pauses checkout when this many payment outcomes are
	// unresolved. BOXOFFICE_PAUSE_AFTER_UNKNOWN; default 50.
	PauseAfterUnknown int
	// PaymentResolveAfter is how long a payment attempt may stay pending or
	// unknown before the reconciler asks the provider what became of it.
	// BOXOFFICE_PAYMENT_RESOLVE_AFTER; default 1m.
	PaymentResolveAfter time.Duration
	// SMTPAddr is the SMTP server tickets are mailed through. SMTP_ADDR;
	// default none (no mail; `dev` starts its own catcher).
	SMTPAddr string
	// MailFrom is the sender of ticket mail. MAIL_FROM; default
	// tickets@boxoffice.local.
	MailFrom string
	// SMSProvider sends login codes by SMS: "twilio", "mail" (every SMS
	// mailed through SMTP_ADDR; `dev` uses it so they show in its inbox) or
	// "" (no SMS). SMS_PROVIDER.
	SMSProvider string
	// Twilio's account, credentials and sender number: TWILIO_ACCOUNT_SID,
	// TWILIO_AUTH_TOKEN, TWILIO_FROM; TWILIO_API_URL overrides the API's
	// address (default https://api.twilio.com).
	TwilioAccountSID, TwilioAuthToken, TwilioFrom, TwilioAPIURL string
	// TenantMaxProducts and TenantMaxCapacity are the quota of tenants
	// without one of their own: how many products, and how many numbers in
	// all of them. BOXOFFICE_TENANT_MAX_PRODUCTS (default 1000),
	// BOXOFFICE_TENANT_MAX_CAPACITY (default 20000000).
	TenantMaxProducts int
	TenantMaxCapacity int
	// AvailabilityCacheBytes bounds the API's cache of availability
	// snapshots. BOXOFFICE_AVAILABILITY_CACHE_BYTES; default 134217728
	// (128 MiB: a hundred 10,000,000-number products).
	AvailabilityCacheBytes int
	// LogLevel is debug, info, warn or error. BOXOFFICE_LOG_LEVEL; default info.
	LogLevel string

	// StoreBucket is the S3 bucket stores are published to, each tenant's
	// under its slug. STORE_BUCKET; default boxoffice-stores.
	StoreBucket string
	// S3Endpoint overrides S3's address (an S3-compatible server). S3_ENDPOINT.
	S3Endpoint string
	// StoreAutoPublish rebuilds and republishes a tenant's store (a River
	// job on the work processes) whenever the tenant changes its store
	// settings. STORE_AUTO_PUBLISH=1; `dev` turns it on.
	StoreAutoPublish bool
	// StoreAPIURL is the API address built into stores (they call it from
	// shoppers' browsers). STORE_API_URL; default none: the store's own
	// origin (`dev` sets its API's address).
	StoreAPIURL string
	// StoresURL is where published stores are served by path (/s/{slug}/),
	// for the address the publish answer shows. BOXOFFICE_STORES_URL;
	// default none (a CDN's, which the API cannot know); `dev` sets its
	// store server's.
	StoresURL string
	// StoreAddr is where `dev` serves published stores: on an origin of
	// their own, apart from the API's and the console's, so that nothing a
	// tenant uploads can act on them. BOXOFFICE_STORE_ADDR; default
	// 127.0.0.1:8081; dev only.
	StoreAddr string
	// StoreStripeKey is the Stripe publishable key built into stores when
	// PAYMENT_PROVIDER=stripe: checkout takes cards with Stripe.js.
	// STORE_STRIPE_KEY.
	StoreStripeKey string
	// S3Credentials, when set, are what S3 clients sign with instead of
	// the standard AWS chain's: `dev`'s in-process S3 accepts only its
	// own. Set by `dev`; no variable.
	S3Credentials aws.CredentialsProvider
	// DevOrigins lets pages on http://localhost and http://127.0.0.1 call
	// the API from a browser (CORS), and the console's session cookie goes
	// without Secure (dev serves plain http). Set by `dev`; no variable.
	DevOrigins bool
	// CPUProfile, when set, is where the process writes a CPU profile of
	// its run when it exits. BOXOFFICE_CPUPROFILE.
	CPUProfile string
	// ClaimInRequest decides each reservation in the request, one
	// transaction per request, without the queue: the synchronous design
	// the burst benchmark measures the pipeline against. Not for
	// production. BOXOFFICE_CLAIM_IN_REQUEST=1.
	ClaimInRequest bool
	// Tracing exports OpenTelemetry traces over OTLP/HTTP: on when
	// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
	// set (and OTEL_SDK_DISABLED is not true); the exporter reads the other
	// OTEL_* variables itself.
	Tracing bool
	// ConsoleIdle ends a console session after this long without a request.
	// BOXOFFICE_CONSOLE_IDLE; default 30m.
	ConsoleIdle time.Duration
	// ConsoleMaxAge ends a console session this long after sign-in, whatever
	// the use. BOXOFFICE_CONSOLE_MAX_AGE; default 12h.
	ConsoleMaxAge time.Duration
	// InboxAddr is where `dev` serves its mail catcher's inbox.
	// BOXOFFICE_INBOX_ADDR; default 127.0.0.1:8025; dev only.
	InboxAddr string
	// PSPSimLatency is the in-process payment simulator's latency per call.
	// PSP_SIM_LATENCY; default 300ms; dev only.
	PSPSimLatency time.Duration
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
	return Bench{DatabaseURL: env("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/boxoffice_bench?sslmode=disable"),
		Keep: os.Getenv("BENCH_KEEP") != ""}
}

// TestDatabaseURL is the tests' database (TEST_DATABASE_URL, set by `make
// test`), or def when unset.
func TestDatabaseURL(def string) string { return env("TEST_DATABASE_URL", def) }

// WebhookSecret is the first of BOXOFFICE_WEBHOOK_SECRETS, or "": what the
// stand-alone payment simulator signs its events with unless told otherwise.
func WebhookSecret() string {
	if secrets := webhookSecrets(os.Getenv); len(secrets) > 0 {
		return secrets[0]
	}
	return ""
}

// webhookSecrets reads the comma-separated BOXOFFICE_WEBHOOK_SECRETS.
func webhookSecrets(getenv func(string) string) []string {
	var out []string
	for _, secret := range strings.Split(getenv("BOXOFFICE_WEBHOOK_SECRETS"), ",") {
		if secret = strings.TrimSpace(secret); secret != "" {
			out = append(out, secret)
		}
	}
	return out
}

// ChromiumPath is the browser the store's browser tests drive
// (BOXOFFICE_CHROMIUM, set by `make test`), or "" to look for one.
func ChromiumPath() string { return os.Getenv("BOXOFFICE_CHROMIUM") }

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
func FromEnv() (*Config, error) { return load(os.Getenv) }

// Default is the configuration an empty environment gives: what the test
// fixtures and benchmarks start from before setting what they need.
func Default() *Config {
	c, err := load(func(string) string { return "" })
	if err != nil {
		panic("config: the defaults do not validate: " + err.Error()) // a bug, caught by the tests
	}
	return c
}

// load reads the configuration through getenv and validates it.
func load(getenv func(string) string) (*Config, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	c := &Config{
		DatabaseURL: env("DATABASE_URL", DefaultDatabaseURL),
		Addr:        env("BOXOFFICE_ADDR", "127.0.0.1:8080"),
		MetricsAddr: env("BOXOFFICE_METRICS_ADDR", "127.0.0.1:9090"),
		AdminKey:    getenv("BOXOFFICE_ADMIN_KEY"),
		LogLevel:    env("BOXOFFICE_LOG_LEVEL", "info"),

		QueueBackend:      env("QUEUE_BACKEND", "river"),
		SQSEndpoint:       getenv("SQS_ENDPOINT"),
		SQSRegion:         getenv("AWS_REGION"),
		SQSQueueURL:       getenv("SQS_QUEUE_URL"),
		SQSDLQURL:         getenv("SQS_DLQ_URL"),
		SQSEventsQueueURL: getenv("SQS_EVENTS_QUEUE_URL"),

		PaymentProviderURL: getenv("PSP_SIM_URL"),
		RehearsalPSPURL:    getenv("REHEARSAL_PSP_URL"),
		ClaimInRequest:     getenv("BOXOFFICE_CLAIM_IN_REQUEST") == "1",
		CPUProfile:         getenv("BOXOFFICE_CPUPROFILE"),
		PaymentProvider:    env("PAYMENT_PROVIDER", "sim"),
		StripeSecretKey:    getenv("STRIPE_SECRET_KEY"),
		StripeAPIURL:       getenv("STRIPE_API_URL"),
		TicketSecret:       getenv("BOXOFFICE_TICKET_SECRET"),
		AccessTokenSecret:  getenv("BOXOFFICE_ACCESS_TOKEN_SECRET"),
		SMTPAddr:           getenv("SMTP_ADDR"),
		MailFrom:           env("MAIL_FROM", "tickets@boxoffice.local"),
		SMSProvider:        getenv("SMS_PROVIDER"),
		StoreBucket:        env("STORE_BUCKET", "boxoffice-stores"),
		StoreAutoPublish:   getenv("STORE_AUTO_PUBLISH") == "1",
		StoreStripeKey:     getenv("STORE_STRIPE_KEY"),
		S3Endpoint:         getenv("S3_ENDPOINT"),
		StoreAPIURL:        strings.TrimSuffix(getenv("STORE_API_URL"), "/"),
		StoresURL:          strings.TrimSuffix(getenv("BOXOFFICE_STORES_URL"), "/"),
		StoreAddr:          env("BOXOFFICE_STORE_ADDR", "127.0.0.1:8081"),
		TwilioAccountSID:   getenv("TWILIO_ACCOUNT_SID"),
		TwilioAuthToken:    getenv("TWILIO_AUTH_TOKEN"),
		TwilioFrom:         getenv("TWILIO_FROM"),
		TwilioAPIURL:       getenv("TWILIO_API_URL"),
		InboxAddr:          env("BOXOFFICE_INBOX_ADDR", "127.0.0.1:8025"),
	}
	for _, p := range strings.Split(getenv("BOXOFFICE_TRUSTED_PROXIES"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := parsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("BOXOFFICE_TRUSTED_PROXIES: %w", err)
		}
		c.TrustedProxies = append(c.TrustedProxies, prefix)
	}
	c.WebhookSecrets = webhookSecrets(getenv)
	if v := getenv("BOXOFFICE_SECRETS_KEY"); v != "" {
		keys, err := atrest.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("BOXOFFICE_SECRETS_KEY: %w", err)
		}
		c.SecretsKey = keys
	}
	var errs []error
	intVar := func(dst *int, name string, def int) {
		*dst = def
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			*dst = n
		}
	}
	durVar := func(dst *time.Duration, name string, def time.Duration) {
		*dst = def
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			*dst = d
		}
	}
	intVar(&c.Workers, "BOXOFFICE_WORKERS", 8)
	intVar(&c.ClaimBatchSize, "BOXOFFICE_CLAIM_BATCH", 1000)
	intVar(&c.DBMaxConns, "BOXOFFICE_DB_MAX_CONNS", 20)
	intVar(&c.DBMinConns, "BOXOFFICE_DB_MIN_CONNS", 0)
	durVar(&c.SweepInterval, "BOXOFFICE_SWEEP_INTERVAL", 2*time.Second)
	durVar(&c.DBLockTimeout, "BOXOFFICE_DB_LOCK_TIMEOUT", 5*time.Second)
	durVar(&c.DBStatementTimeout, "BOXOFFICE_DB_STATEMENT_TIMEOUT", 30*time.Second)
	durVar(&c.FenceProbeInterval, "BOXOFFICE_FENCE_PROBE_INTERVAL", time.Second)
	durVar(&c.AcceptLinger, "BOXOFFICE_ACCEPT_LINGER", time.Millisecond)
	intVar(&c.AcceptTransactions, "BOXOFFICE_ACCEPT_TRANSACTIONS", 1)
	durVar(&c.AuditInterval, "BOXOFFICE_AUDIT_INTERVAL", time.Minute)
	durVar(&c.RequeueAfter, "BOXOFFICE_REQUEUE_AFTER", 30*time.Second)
	durVar(&c.RepublishAfter, "BOXOFFICE_REPUBLISH_AFTER", 10*time.Second)
	floatVar := func(dst *float64, name string) {
		if v := getenv(name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			*dst = f
		}
	}
	floatVar(&c.ClaimRate, "BOXOFFICE_CLAIM_RATE")
	floatVar(&c.ClaimRatePerProduct, "BOXOFFICE_CLAIM_RATE_PER_PRODUCT")
	intVar(&c.TenantClaims, "BOXOFFICE_TENANT_CLAIMS", 0)
	intVar(&c.SQSMaxReceiveCount, "SQS_MAX_RECEIVE_COUNT", 5)
	durVar(&c.SQSVisibilityTimeout, "SQS_VISIBILITY_TIMEOUT", 30*time.Second)
	durVar(&c.SQSWaitTime, "SQS_WAIT_TIME", 20*time.Second)
	intVar(&c.SQSPollers, "SQS_POLLERS", 4)
	durVar(&c.PaymentTimeout, "PAYMENT_TIMEOUT", 10*time.Second)
	durVar(&c.PSPSimLatency, "PSP_SIM_LATENCY", 300*time.Millisecond)
	intVar(&c.PaymentWorkers, "BOXOFFICE_PAYMENT_WORKERS", 50)
	durVar(&c.CheckoutGrace, "BOXOFFICE_CHECKOUT_GRACE", 2*time.Minute)
	intVar(&c.PauseAfterUnknown, "BOXOFFICE_PAUSE_AFTER_UNKNOWN", 50)
	durVar(&c.PaymentResolveAfter, "BOXOFFICE_PAYMENT_RESOLVE_AFTER", time.Minute)
	c.Tracing = (getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") &&
		!strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true")
	durVar(&c.ConsoleIdle, "BOXOFFICE_CONSOLE_IDLE", 30*time.Minute)
	durVar(&c.ConsoleMaxAge, "BOXOFFICE_CONSOLE_MAX_AGE", 12*time.Hour)
	intVar(&c.RateLimitPerIP, "BOXOFFICE_RATE_LIMIT_IP", 200)
	durVar(&c.AdmissionSlowClaims, "BOXOFFICE_ADMISSION_SLOW_CLAIMS", 5*time.Second)
	intVar(&c.AdmissionPaymentTrouble, "BOXOFFICE_ADMISSION_PAYMENT_TROUBLE", 10)
	intVar(&c.RateLimitPerBuyer, "BOXOFFICE_RATE_LIMIT_BUYER", 20)
	intVar(&c.RateLimitLogin, "BOXOFFICE_RATE_LIMIT_LOGIN", 20)
	intVar(&c.LoginChallengeBits, "BOXOFFICE_LOGIN_CHALLENGE_BITS", 14)
	intVar(&c.RateLimitAny, "BOXOFFICE_RATE_LIMIT_ANY", 300)
	intVar(&c.StreamsPerClient, "BOXOFFICE_STREAMS_PER_CLIENT", 20)
	intVar(&c.SMSDailyCap, "BOXOFFICE_SMS_DAILY_CAP", 1000)
	intVar(&c.TenantMaxProducts, "BOXOFFICE_TENANT_MAX_PRODUCTS", 1000)
	intVar(&c.TenantMaxCapacity, "BOXOFFICE_TENANT_MAX_CAPACITY", 20_000_000)
	intVar(&c.AvailabilityCacheBytes, "BOXOFFICE_AVAILABILITY_CACHE_BYTES", 128<<20)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, c.Validate()
}

// Validate reports configuration that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if c.Workers < 1 || c.Workers > 1000 {
		errs = append(errs, errors.New("BOXOFFICE_WORKERS must be between 1 and 1000"))
	}
	if c.ClaimBatchSize < 1 || c.ClaimBatchSize > 10000 {
		errs = append(errs, errors.New("BOXOFFICE_CLAIM_BATCH must be between 1 and 10000"))
	}
	if c.DBMaxConns < 4 {
		errs = append(errs, errors.New("BOXOFFICE_DB_MAX_CONNS must be at least 4"))
	}
	if c.DBMinConns < 0 || c.DBMinConns > c.DBMaxConns {
		errs = append(errs, errors.New("BOXOFFICE_DB_MIN_CONNS must be between 0 and BOXOFFICE_DB_MAX_CONNS"))
	}
	if c.AcceptTransactions < 0 {
		errs = append(errs, errors.New("BOXOFFICE_ACCEPT_TRANSACTIONS must be 0 (no limit) or more"))
	}
	if c.DBLockTimeout < 100*time.Millisecond || c.DBLockTimeout >= 10*time.Second {
		errs = append(errs, errors.New("BOXOFFICE_DB_LOCK_TIMEOUT must be at least 100ms and below the API's 10s request deadline"))
	}
	if c.DBStatementTimeout < time.Second {
		errs = append(errs, errors.New("BOXOFFICE_DB_STATEMENT_TIMEOUT must be at least 1s"))
	}
	if c.FenceProbeInterval < 100*time.Millisecond {
		errs = append(errs, errors.New("BOXOFFICE_FENCE_PROBE_INTERVAL must be at least 100ms"))
	}
	if c.SweepInterval < 100*time.Millisecond {
		errs = append(errs, errors.New("BOXOFFICE_SWEEP_INTERVAL must be at least 100ms"))
	}
	if c.AuditInterval < time.Second {
		errs = append(errs, errors.New("BOXOFFICE_AUDIT_INTERVAL must be at least 1s"))
	}
	if c.RequeueAfter < time.Second {
		errs = append(errs, errors.New("BOXOFFICE_REQUEUE_AFTER must be at least 1s"))
	}
	if c.RepublishAfter < time.Second {
		errs = append(errs, errors.New("BOXOFFICE_REPUBLISH_AFTER must be at least 1s"))
	}
	if c.TenantClaims < 0 {
		errs = append(errs, errors.New("BOXOFFICE_TENANT_CLAIMS must not be negative"))
	}
	if c.ClaimRate < 0 || c.ClaimRatePerProduct < 0 {
		errs = append(errs, errors.New("BOXOFFICE_CLAIM_RATE and BOXOFFICE_CLAIM_RATE_PER_PRODUCT must not be negative"))
	}
	if c.PaymentTimeout < 100*time.Millisecond || c.PaymentWorkers < 1 || c.CheckoutGrace < 0 || c.PauseAfterUnknown < 1 || c.PaymentResolveAfter <= 0 {
		errs = append(errs, errors.New("PAYMENT_TIMEOUT ≥ 100ms, BOXOFFICE_PAYMENT_WORKERS ≥ 1, BOXOFFICE_CHECKOUT_GRACE ≥ 0, BOXOFFICE_PAUSE_AFTER_UNKNOWN ≥ 1 and BOXOFFICE_PAYMENT_RESOLVE_AFTER > 0 are required"))
	}
	if c.ConsoleIdle < time.Second || c.ConsoleMaxAge < c.ConsoleIdle {
		errs = append(errs, errors.New("BOXOFFICE_CONSOLE_IDLE must be at least 1s and BOXOFFICE_CONSOLE_MAX_AGE at least as long"))
	}
	switch c.SMSProvider {
	case "":
	case "twilio":
		if c.TwilioAccountSID == "" || c.TwilioAuthToken == "" || c.TwilioFrom == "" {
			errs = append(errs, errors.New("SMS_PROVIDER=twilio needs TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM"))
		}
	case "mail":
		if c.SMTPAddr == "" {
			errs = append(errs, errors.New("SMS_PROVIDER=mail needs SMTP_ADDR"))
		}
	default:
		errs = append(errs, fmt.Errorf("SMS_PROVIDER %q: want twilio, mail or nothing", c.SMSProvider))
	}
	switch c.PaymentProvider {
	case "sim":
		if c.PaymentProviderURL != "" && (len(c.WebhookSecrets) == 0 || c.TicketSecret == "") {
			errs = append(errs, errors.New("with PSP_SIM_URL set, BOXOFFICE_WEBHOOK_SECRETS and BOXOFFICE_TICKET_SECRET are required"))
		}
	case "stripe":
		if c.StripeSecretKey == "" || len(c.WebhookSecrets) == 0 || c.TicketSecret == "" {
			errs = append(errs, errors.New("PAYMENT_PROVIDER=stripe needs STRIPE_SECRET_KEY, BOXOFFICE_WEBHOOK_SECRETS and BOXOFFICE_TICKET_SECRET"))
		}
	default:
		errs = append(errs, errors.New("PAYMENT_PROVIDER must be sim or stripe"))
	}
	switch c.QueueBackend {
	case "river":
	case "sqs":
		if c.SQSMaxReceiveCount < 1 || c.SQSMaxReceiveCount > 1000 {
			errs = append(errs, errors.New("SQS_MAX_RECEIVE_COUNT must be between 1 and 1000"))
		}
		if c.SQSVisibilityTimeout < time.Second || c.SQSVisibilityTimeout > 12*time.Hour {
			errs = append(errs, errors.New("SQS_VISIBILITY_TIMEOUT must be between 1s and 12h"))
		}
		if c.SQSWaitTime < 0 || c.SQSWaitTime > 20*time.Second {
			errs = append(errs, errors.New("SQS_WAIT_TIME must be between 0 and 20s"))
		}
		if c.SQSPollers < 1 || c.SQSPollers > 100 {
			errs = append(errs, errors.New("SQS_POLLERS must be between 1 and 100"))
		}
	default:
		errs = append(errs, errors.New("QUEUE_BACKEND must be river or sqs"))
	}
	if c.TenantMaxProducts < 0 || c.TenantMaxCapacity < 0 {
		errs = append(errs, errors.New("BOXOFFICE_TENANT_MAX_PRODUCTS and BOXOFFICE_TENANT_MAX_CAPACITY must not be negative"))
	}
	if c.AvailabilityCacheBytes < 1<<20 {
		errs = append(errs, errors.New("BOXOFFICE_AVAILABILITY_CACHE_BYTES must be at least 1048576"))
	}
	if err := checkDatabaseURL(c.DatabaseURL); err != nil {
		errs = append(errs, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, errors.New("BOXOFFICE_LOG_LEVEL must be debug, info, warn or error"))
	}
	return errors.Join(errs...)
}

func env(name, def string) string {
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
