package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/config"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/tenant"
)

// runPSPSim runs the payment provider simulator on its own.
func runPSPSim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("psp-sim", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	cfg := pspsim.Config{Logger: newLogger("info")}
	fs.StringVar(&cfg.WebhookURL, "webhook-url", "http://127.0.0.1:8080/v1/webhooks/payments/sim", "where events go")
	fs.StringVar(&cfg.WebhookSecret, "webhook-secret", config.WebhookSecret(), "HMAC secret of the events")
	fs.DurationVar(&cfg.Latency, "latency", 300*time.Millisecond, "added to every call")
	fs.DurationVar(&cfg.ResponseDelay, "response-delay", 0, "hold responses back after acting (webhooks overtake)")
	fs.IntVar(&cfg.WebhookDuplicates, "duplicates", 0, "extra copies of every webhook")
	fs.DurationVar(&cfg.WebhookDelay, "webhook-delay", 0, "random delay of each webhook copy (reorders them)")
	if err := parseFlags(fs, "usage: boxoffice psp-sim [flags]\n\nrun the payment provider simulator on its own\n", args); err != nil {
		return err
	}
	sim := pspsim.New(cfg)
	defer sim.Close()
	srv := &http.Server{Addr: *addr, Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	cfg.Logger.Info("payment simulator listening", "addr", *addr, "webhooks", cfg.WebhookURL)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// runToken mints a buyer token, standing in for a tenant's own login.
func runToken(args []string) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	tenantID := fs.String("tenant", "", "tenant id")
	secret := fs.String("secret", "", "tenant's buyerTokenSecret")
	buyer := fs.String("buyer", "", "buyer id (sub)")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime")
	const usage = "usage: boxoffice token -tenant ID -secret S -buyer B [-ttl 24h]\n\nmint a buyer token as a tenant's login would\n"
	if err := parseFlags(fs, usage, args); err != nil {
		return err
	}
	id, err := uuid.Parse(*tenantID)
	if err != nil || *secret == "" || *buyer == "" {
		return errUsage("token needs -tenant (uuid), -secret and -buyer\n\n%s", usage)
	}
	if *ttl <= 0 || *ttl > tenant.MaxBuyerTokenLifetime {
		return errUsage("-ttl must be positive and at most %s (the API refuses longer-lived tokens)\n\n%s", tenant.MaxBuyerTokenLifetime, usage)
	}
	token, err := tenant.SignBuyerToken([]byte(*secret), id, *buyer, *ttl)
	if err != nil {
		return err
	}
	fmt.Println(token)
	return nil
}
