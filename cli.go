package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
)

// usageError is a command line the binary cannot run: main prints it (the
// usage it carries) to stderr and exits 2, not as a failure log line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// errUsage wraps a usage text (and optionally what was wrong) for main.
func errUsage(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// parseFlags parses a subcommand's flags: -h and --help print its usage and
// return flag.ErrHelp (main exits 0 with no side effect), and an unknown
// flag or a stray argument is a usage error, so `migrate --help` can never
// migrate.
func parseFlags(fs *flag.FlagSet, usage string, args []string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Print(usage)
		if defaults := flagDefaults(fs); defaults != "" {
			fmt.Print("\nFlags:\n" + defaults)
		}
		return flag.ErrHelp
	case err != nil:
		return errUsage("%s: %v\n\n%s", fs.Name(), err, usage)
	case fs.NArg() > 0:
		return errUsage("%s: unexpected argument %q\n\n%s", fs.Name(), fs.Arg(0), usage)
	}
	return nil
}

// noFlags parses the arguments of a command that takes none.
func noFlags(name, usage string, args []string) error {
	return parseFlags(flag.NewFlagSet(name, flag.ContinueOnError), usage, args)
}

func flagDefaults(fs *flag.FlagSet) string {
	var out string
	fs.VisitAll(func(f *flag.Flag) {
		out += fmt.Sprintf("  -%s\t%s", f.Name, f.Usage)
		if f.DefValue != "" {
			out += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		out += "\n"
	})
	return out
}

// buildVersion is the version stamped with -X main.version (make build,
// make image), else what the Go toolchain recorded: the module version or
// the VCS revision (absent when built with -buildvcs=false).
func buildVersion(stamped string) string {
	if stamped != "" {
		return stamped
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	revision, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	switch {
	case revision != "" && modified:
		return revision + "-dirty"
	case revision != "":
		return revision
	case info.Main.Version != "":
		return info.Main.Version
	}
	return "unknown"
}

// runHealthcheck asks one URL (the API's /readyz, a work process's
// /livez on its metrics listener) and fails unless it answers 2xx within
// five seconds: a container's health check where the image has no shell
// and no curl.
func runHealthcheck(ctx context.Context, args []string) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return usageError{"usage: boxoffice healthcheck URL\n\nexit 0 when URL answers 2xx within 5 s\n"}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil) //nolint:gosec // G704: the operator names the URL to check
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req) //nolint:gosec // G704: the operator names the URL to check
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("healthcheck: %s answered %s", args[0], resp.Status)
	}
	return nil
}
