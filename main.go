// Command boxoffice is BoxOffice's one binary: the API, the workers, the
// periodic jobs, migrations, a development mode and the benchmarks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"boxoffice/internal/config"
)

const usage = `boxoffice — flash-sale reservations of numbered inventory

Usage:
  boxoffice migrate             apply database migrations
  boxoffice serve               run the HTTP API
  boxoffice work                run the claim workers and periodic jobs
  boxoffice dev                 migrate, seed a demo tenant and products, run everything (-tags dev builds)
  boxoffice token -tenant ID -secret S -buyer B [-ttl 24h]
                                mint a buyer token as a tenant's login would
  boxoffice psp-sim [flags]     run the payment provider simulator on its own
  boxoffice store build|publish -tenant SLUG [-out DIR]
                                render a tenant's static store, or publish it to BOXOFFICE_STORE_BUCKET
  boxoffice bench SCENARIO|all [flags]
                                benchmarks (docs/benchmarks.md; -tags dev builds)
  boxoffice sqs-emulator        the SQS emulator in a process of its own (-tags dev builds)
  boxoffice healthcheck URL     exit 0 when URL answers 2xx within 5 s (for images without a shell)
  boxoffice version|--version   the version this binary was built from

Configuration is read from the environment; see docs/configuration.md.
`

// version is the commit the binary was built from, stamped by make build
// and the image build (-ldflags "-X main.version=…"); empty otherwise.
var version string

// withFlags runs a command configured from the environment once its
// arguments (none but -h) are parsed.
func withFlags(ctx context.Context, name, usage string, args []string,
	run func(context.Context, *config.Config, *slog.Logger) error) error {
	if err := noFlags(name, usage, args); err != nil {
		return err
	}
	return withConfig(ctx, run)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "migrate":
		err = withFlags(ctx, cmd, "usage: boxoffice migrate\n\napply database migrations\n", args, runMigrate)
	case "serve":
		err = withFlags(ctx, cmd, "usage: boxoffice serve\n\nrun the HTTP API\n", args, runServe)
	case "work":
		err = withFlags(ctx, cmd, "usage: boxoffice work\n\nrun the claim workers and periodic jobs\n", args, runWork)
	case "dev":
		err = withFlags(ctx, cmd, "usage: boxoffice dev\n\nmigrate, seed a demo tenant and products, run everything\n", args, runDev)
	case "token":
		err = runToken(args)
	case "psp-sim":
		err = runPSPSim(ctx, args)
	case "store":
		err = runStore(ctx, args)
	case "bench":
		err = runBench(ctx, args)
	case "sqs-emulator":
		err = runSQSEmulator(ctx, args)
	case "healthcheck":
		err = runHealthcheck(ctx, args)
	case "version", "--version", "-version":
		err = noFlags(cmd, "usage: boxoffice version\n\nprint the version this binary was built from\n", args)
		if err == nil {
			fmt.Println(buildVersion(version))
		}
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // a command's -h: its usage is already printed
	}
	if usage := (usageError{}); errors.As(err, &usage) {
		fmt.Fprint(os.Stderr, usage.msg)
		os.Exit(2)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		// The same JSON on stderr as every other line the process writes.
		newLogger("error").Error("boxoffice failed", "command", os.Args[1], "error", err)
		os.Exit(1)
	}
}
