//go:build !dev

package main

import (
	"context"
	"errors"
	"log/slog"

	"boxoffice/internal/config"
)

// errNoDev explains the commands a production build leaves out.
var errNoDev = errors.New("this boxoffice was built without development mode: `dev`, `bench` and `sqs-emulator` need " +
	"`go build -tags dev` (make run and make bench build it so)")

func runDev(context.Context, *config.Config, *slog.Logger) error { return errNoDev }

func runBench(context.Context, []string) error { return errNoDev }

func runSQSEmulator(context.Context, []string) error { return errNoDev }
