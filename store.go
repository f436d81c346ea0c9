package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
)

const storeUsage = `usage:
  boxoffice store build -tenant SLUG -out DIR [-api URL]   render the tenant's store into DIR
  boxoffice store publish -tenant SLUG [-api URL]          build it and upload it to BOXOFFICE_STORE_BUCKET under SLUG/
`

// runStore builds or publishes a tenant's static store.
func runStore(ctx context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Print(storeUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 || (args[0] != "build" && args[0] != "publish") {
		return errUsage("%s", storeUsage)
	}
	fs := flag.NewFlagSet("store "+args[0], flag.ContinueOnError)
	slug := fs.String("tenant", "", "the tenant's slug")
	out := fs.String("out", "", "build: the folder to write the store to")
	apiBase := fs.String("api", "", "the API's address built into the store (default BOXOFFICE_STORE_API_URL; empty: the store's own origin)")
	if err := parseFlags(fs, storeUsage, args[1:]); err != nil {
		return err
	}
	if *slug == "" || (args[0] == "build" && *out == "") {
		return errUsage("store %s: -tenant is required (and -out for build)\n\n%s", args[0], storeUsage)
	}
	return withConfig(ctx, func(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
		if *apiBase == "" {
			*apiBase = cfg.StoreAPIURL
		}
		pool, _, err := openDatabase(ctx, cfg, logger, db.PoolOptions{MaxConns: 2})
		if err != nil {
			return err
		}
		defer pool.Close()
		pub := &storefront.Publisher{Tenants: tenant.NewStore(pool, cfg.SecretsKey), APIBase: *apiBase, StripeKey: cfg.StoreStripeKey}
		if args[0] == "publish" {
			client, err := storefront.NewS3(ctx, cfg.S3Endpoint, cfg.SQSRegion, cfg.S3Credentials)
			if err != nil {
				return err
			}
			pub.Bucket = storefront.Bucket{Client: client, Name: cfg.StoreBucket}
			if err := pub.Publish(ctx, *slug); err != nil {
				return err
			}
			logger.Info("store published", "tenant", *slug, "bucket", cfg.StoreBucket, "prefix", *slug+"/")
			return nil
		}
		site, err := pub.Build(ctx, *slug)
		if err != nil {
			return err
		}
		for name, f := range site {
			path := filepath.Join(*out, filepath.FromSlash(name))
			// A static site for a web server to read, not secrets.
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // G301: a site's folder
				return err
			}
			if err := os.WriteFile(path, f.Body, 0o644); err != nil { //nolint:gosec // G306: a site's file
				return err
			}
		}
		fmt.Printf("store of %s written to %s (%d files)\n", *slug, *out, len(site))
		return nil
	})
}
