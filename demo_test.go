package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/dbtest"
	"boxoffice/internal/proctest"
)

// startDemo runs `boxoffice dev` — the demo `make run` seeds — on a database
// of its own and free ports, as a developer would, and returns what its
// banner printed by name ("Store", "API", "Console", "Buyer token",
// "Stadium", ...; the first word after the name).
func startDemo(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	base := dbtest.URL(t)
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	name := fmt.Sprintf("boxoffice_dev_%d", time.Now().UnixNano())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		_ = conn.Close(context.Background())
	})
	dbURL := regexp.MustCompile(`/[^/?]+(\?|$)`).ReplaceAllString(base, "/"+name+"$1")
	port := func() string { return fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)) }
	cmd := exec.Command(proctest.Binary(t), "dev")
	t.Cleanup(proctest.CleanupBinary)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "BOXOFFICE_ADDR="+port(), "BOXOFFICE_METRICS_ADDR="+port(),
		"BOXOFFICE_STORE_ADDR="+port(), "BOXOFFICE_INBOX_ADDR="+port(), "BOXOFFICE_SMTP_ADDR=")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	printed := map[string]string{}
	lines := bufio.NewScanner(out)
	for lines.Scan() && printed["Sold out"] == "" { // the last id the banner prints
		if k, v, ok := strings.Cut(strings.TrimSpace(lines.Text()), "  "); ok {
			printed[k] = strings.Fields(v)[0]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	require.NotEmpty(t, printed["Buyer token"], "dev printed its banner: %v", printed)
	return printed
}
