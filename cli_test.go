package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommandLine runs the built binary as an operator would: -h and --help
// print a command's usage and exit 0 without doing anything (DATABASE_URL
// points nowhere, so a command that ran would fail), unknown flags and
// stray arguments exit 2, and the version is the one stamped at build.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "boxoffice")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v1.2.3-test", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var runWith func(env []string, args ...string) (string, string, int)
	run := func(args ...string) (string, string, int) {
		return runWith(nil, args...)
	}
	runWith = func(env []string, args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "BOXOFFICE_SECRETS_KEY=")
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return stdout.String(), stderr.String(), code
	}

	for _, args := range [][]string{
		{"serve", "-h"}, {"serve", "--help"}, {"work", "-h"}, {"migrate", "--help"}, {"migrate", "-h"},
		{"dev", "-h"}, {"store", "-h"}, {"token", "-h"}, {"psp-sim", "--help"}, {"help"},
	} {
		stdout, stderr, code := run(args...)
		require.Zero(t, code, "%v: stderr %s", args, stderr)
		require.Contains(t, strings.ToLower(stdout), "usage", "%v", args)
		require.NotContains(t, stderr, "migrations", "%v did something", args)
		require.NotContains(t, stderr, "ERROR", "%v", args)
	}
	for _, args := range [][]string{
		{"serve", "extra"}, {"migrate", "--force"}, {"work", "-x"}, {"store"}, {"store", "build", "-nope"},
		{"token", "-tenant", "x", "stray"}, {"nonsense"},
	} {
		_, stderr, code := run(args...)
		require.Equal(t, 2, code, "%v: stderr %s", args, stderr)
		require.NotContains(t, stderr, `"level":"ERROR"`, "%v: a usage error is not a failure log", args)
	}
	// migrate seals secrets: without the key, or with a malformed one, it
	// stops before touching the database, and never shows the key.
	_, stderr, code := run("migrate")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "BOXOFFICE_SECRETS_KEY is required")
	_, stderr, code = runWith([]string{"BOXOFFICE_SECRETS_KEY=k1:c2hvcnQta2V5LXZhbHVl"}, "migrate")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, `BOXOFFICE_SECRETS_KEY: key \"k1\": 15 bytes, want 32`)
	require.NotContains(t, stderr, "c2hvcnQta2V5LXZhbHVl")
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, _, code := run(args...)
		require.Zero(t, code)
		require.Equal(t, "v1.2.3-test\n", stdout, "%v", args)
	}

	// A failure is one JSON line, as every other line the process logs.
	_, stderr, code = run("migrate")
	require.Equal(t, 1, code)
	var failed map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(stderr)), &failed), stderr)
	require.Equal(t, "boxoffice failed", failed["msg"])

	// healthcheck: 0 for a 2xx, 1 for anything else or no answer, 2 without a URL.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/livez" {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	defer up.Close()
	_, stderr, code = run("healthcheck", up.URL+"/livez")
	require.Zero(t, code, stderr)
	_, stderr, code = run("healthcheck", up.URL+"/readyz")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "503")
	_, _, code = run("healthcheck", "http://127.0.0.1:1/livez")
	require.Equal(t, 1, code)
	_, _, code = run("healthcheck")
	require.Equal(t, 2, code)
}

// BOXOFFICE_GC_PERCENT sets the collector's target; GOGC, when set, wins.
func TestGCPercentUnlessGOGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	t.Setenv("GOGC", "")
	tuneGC(400)
	require.Equal(t, 400, debug.SetGCPercent(100))
	t.Setenv("GOGC", "150")
	tuneGC(800)
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left as the runtime has it")
}
