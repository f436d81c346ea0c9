package webhook_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/webhook"
)

// block returns the fenced block of lang in doc that contains marker.
func block(t *testing.T, doc, lang, marker string) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		if strings.Contains(m[1], marker) {
			return m[1]
		}
	}
	t.Fatalf("docs/webhooks.md has no %s block with %q", lang, marker)
	return ""
}

// TestDocsVerifiers runs docs/webhooks.md's Go and shell verifiers on a
// delivery signed as BoxOffice signs them (two secrets: a rotation's
// overlap), and on a tampered body; and checks the page names every type.
func TestDocsVerifiers(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/webhooks.md")
	require.NoError(t, err)
	doc := string(raw)
	for _, typ := range webhook.Types {
		require.Contains(t, doc, "`"+typ.Name+"`", "docs/webhooks.md names every event type")
	}

	old, current := webhook.NewSecret(), webhook.NewSecret()
	body := []byte(`{"type":"order.confirmed","timestamp":"2026-12-03T09:20:00Z","sequence":1,"data":{"orderId":"x"}}`)
	id, at := "msg_0123456789abcdef", time.Now()
	sig, err := webhook.Signature([]string{old, current}, id, at, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	h.Set("webhook-signature", sig)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(good, body, 0o600))
	require.NoError(t, os.WriteFile(bad, append(body[:len(body)-1:len(body)-1], ' ', '}'), 0o600))

	t.Run("go", func(t *testing.T) {
		t.Parallel()
		src := `package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

` + block(t, doc, "go", "func Verify") + `
func main() {
	h := http.Header{}
	for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		h.Set(k, os.Getenv(strings.ToUpper(strings.ReplaceAll(k, "-", "_"))))
	}
	body, _ := os.ReadFile(os.Args[1])
	if err := Verify(os.Getenv("SECRET"), h, body); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("verified")
}
`
		main := filepath.Join(t.TempDir(), "main.go")
		require.NoError(t, os.WriteFile(main, []byte(src), 0o600))
		bin := filepath.Join(t.TempDir(), "verify")
		out, err := exec.Command("go", "build", "-o", bin, main).CombinedOutput()
		require.NoError(t, err, string(out))
		for _, secret := range []string{old, current} {
			out, err := verifier(bin, secret, h, good).CombinedOutput()
			require.NoError(t, err, string(out))
		}
		out, err = verifier(bin, current, h, bad).CombinedOutput()
		require.Error(t, err, "a tampered body: %s", out)
		out, err = verifier(bin, webhook.NewSecret(), h, good).CombinedOutput()
		require.Error(t, err, "another secret: %s", out)
	})
	t.Run("shell", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("openssl"); err != nil {
			t.Skip("no openssl on this machine: the shell verifier needs it")
		}
		script := block(t, doc, "sh", "openssl dgst")
		// The script reads body.json in its working directory.
		run := func(secret, dir string) ([]byte, error) {
			cmd := verifier("bash", secret, h, "")
			cmd.Args, cmd.Dir = []string{"bash", "-c", script}, dir
			return cmd.CombinedOutput()
		}
		d1, d2 := t.TempDir(), t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d1, "body.json"), body, 0o600))
		raw, err := os.ReadFile(bad)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d2, "body.json"), raw, 0o600))
		for _, secret := range []string{old, current} {
			out, err := run(secret, d1)
			require.NoError(t, err, string(out))
			require.Equal(t, "verified\n", string(out))
		}
		out, err := run(current, d2)
		require.Error(t, err, "a tampered body: %s", out)
	})
}

// verifier runs a verifier with a delivery's headers and secret in its
// environment and file as its argument.
func verifier(bin, secret string, h http.Header, file string) *exec.Cmd {
	cmd := exec.Command(bin, file)
	cmd.Env = append(os.Environ(), "SECRET="+secret, "WEBHOOK_ID="+h.Get("webhook-id"),
		"WEBHOOK_TIMESTAMP="+h.Get("webhook-timestamp"), "WEBHOOK_SIGNATURE="+h.Get("webhook-signature"))
	return cmd
}
