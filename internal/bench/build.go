package bench

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/api"
	"boxoffice/internal/app"
	"boxoffice/internal/atrest"
	"boxoffice/internal/config"
	"boxoffice/internal/product"
	"boxoffice/internal/tenant"
)

// build wires the services as the binary does (app.New) on the benchmark's
// pool, from the default configuration with a benchmark's usual changes,
// then the scenario's own (tune may be nil).
func build(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, o app.Options, tune func(*config.Config)) (*app.App, error) {
	cfg := config.Default()
	// Periodic jobs out of the measurement: each runs once at start, then
	// not for an hour.
	cfg.SweepInterval, cfg.AuditInterval = time.Hour, time.Hour
	cfg.RequeueAfter, cfg.RepublishAfter = 2*time.Hour, 2*time.Hour
	// Accepts one transaction each unless a scenario batches them.
	cfg.AcceptLinger = 0
	// The load comes from one address and a few hundred buyers.
	cfg.RateLimitPerIP, cfg.RateLimitPerBuyer, cfg.RateLimitAny, cfg.StreamsPerClient = 0, 0, 0, 0
	cfg.LoginChallengeBits = 0
	// The operator's access log is not what a scenario measures.
	cfg.AccessLog = false
	// Simulated provider timeouts must not pause checkout mid-measurement.
	cfg.PauseAfterUnknown = 1 << 30
	cfg.SecretsKey = secretsKey()
	if tune != nil {
		tune(cfg)
	}
	return app.New(ctx, cfg, pool, logger, o)
}

// secretsKey seals the bench tenants' secrets: a fixed key, since the
// bench database is scratch and scenarios build their tenants and apps
// apart.
func secretsKey() *atrest.Keyring {
	keys, err := atrest.New("bench", make([]byte, atrest.KeySize))
	if err != nil {
		panic(err) // a fixed id and size: cannot fail
	}
	return keys
}

// newProducts is a product store with the deployment's default quota.
func newProducts(pool *pgxpool.Pool) *product.Store {
	return product.NewStore(pool, app.TenantQuota(config.Default()))
}

// newTenant creates a tenant for one scenario, under a fresh slug.
func newTenant(ctx context.Context, pool *pgxpool.Pool, prefix string) (*tenant.Created, error) {
	return tenant.NewStore(pool, secretsKey()).Create(ctx, tenant.CreateParams{Slug: prefix + uuid.NewString()[:8], Name: "Bench"})
}

// serve runs the App's API on a loopback port until stop is called, and
// returns its base URL ("http://127.0.0.1:port").
func serve(ctx context.Context, a *app.App) (srv *api.Server, base string, stop func(), err error) {
	srv = a.API()
	srvCtx, cancel := context.WithCancel(ctx)
	if err := srv.Start(srvCtx); err != nil {
		cancel()
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, "", nil, err
	}
	go func() { _ = srv.App().Listener(ln) }()
	return srv, "http://" + ln.Addr().String(), func() {
		_ = srv.App().ShutdownWithTimeout(5 * time.Second)
		cancel()
	}, nil
}
