// Package deploy tests the deployment as a user runs it: the project's
// Dockerfile built into an image, and compose.yaml brought up with it —
// PostgreSQL, the migrations, two API processes behind nginx, two workers,
// the payment simulator and the mail catcher — then a ticket bought
// through nginx, the API restarted under load, a worker killed. It runs
// with BOXOFFICE_DEPLOY_TEST=1 (make deploy-test, which .ci/run calls),
// with podman; where no registry is reachable the base images are local
// stand-ins (infra/deploy/standins.sh), never a fork of the files.
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/fleet"
)

const (
	project  = "boxofficedeploy"
	version  = "deploytest"
	api      = "http://127.0.0.1:8080"
	inbox    = "http://127.0.0.1:8025"
	maxImage = 70 << 20
)

// engine is the machine's container engine with the project's compose file.
type engine struct {
	t    *testing.T
	root string
	env  []string // CONTAINERS_CONF and the stand-ins' names
}

func (f *engine) cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir, c.Env = f.root, append(os.Environ(), f.env...)
	return c
}

// run runs a command in the project's root and returns its output.
func (f *engine) run(name string, args ...string) (string, error) {
	var out bytes.Buffer
	c := f.cmd(name, args...)
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return out.String(), err
}

func (f *engine) must(name string, args ...string) string {
	f.t.Helper()
	out, err := f.run(name, args...)
	require.NoError(f.t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return out
}

func (f *engine) compose(args ...string) string {
	f.t.Helper()
	return f.must("podman-compose", append([]string{"-p", project, "-f", "compose.yaml"}, args...)...)
}

func container(service string) string { return project + "_" + service + "_1" }

func TestDeploy(t *testing.T) {
	if os.Getenv("BOXOFFICE_DEPLOY_TEST") == "" {
		t.Skip("the deploy test runs with BOXOFFICE_DEPLOY_TEST=1 (make deploy-test)")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	f := &engine{t: t, root: root}
	started := time.Now()

	// The engine: podman as this sandbox needs it, or a clear skip.
	conf, err := f.run("infra/dev/containers.sh")
	if err != nil {
		t.Skipf("no container engine here: %s", conf)
	}
	f.env = append(f.env, "CONTAINERS_CONF="+strings.TrimSpace(lastLine(conf)))
	if out, err := f.run("podman", "info"); err != nil {
		t.Skipf("podman cannot start containers here: %s", out)
	}
	standins := f.must("infra/deploy/standins.sh")
	f.env = append(f.env, strings.Fields(lastLine(standins))...)
	f.env = append(f.env, "BOXOFFICE_VERSION="+version, "BOXOFFICE_ADMIN_KEY="+fleet.AdminKey)
	t.Logf("engine and stand-ins ready in %s", time.Since(started).Round(time.Second))

	// The image, from the project's Dockerfile.
	image := "boxoffice:" + version
	build := time.Now()
	args := []string{"build", "--format", "docker", "--network", "host", "--build-arg", "VERSION=" + version}
	for _, kv := range f.env {
		if k, _, _ := strings.Cut(kv, "="); k == "GO_IMAGE" || k == "RUNTIME_IMAGE" {
			args = append(args, "--build-arg", kv)
		}
	}
	f.must("podman", append(args, "-t", image, ".")...)
	t.Logf("image built in %s", time.Since(build).Round(time.Second))
	checkImage(t, f, image)

	// The fleet.
	_, _ = f.run("podman-compose", "-p", project, "-f", "compose.yaml", "down", "-v")
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range []string{"migrate", "api-1", "api-2", "work-1", "work-2", "proxy", "psp-sim", "mailpit"} {
				out, _ := f.run("podman", "logs", "--tail", "15", container(s))
				t.Logf("%s:\n%s", s, out)
			}
		}
		_, _ = f.run("podman-compose", "-p", project, "-f", "compose.yaml", "down", "-v")
	})
	up := time.Now()
	f.compose("up", "-d")
	for _, s := range []string{"api-1", "api-2", "work-1", "work-2", "psp-sim"} {
		waitHealthy(t, f, container(s))
	}
	waitHTTP(t, api+"/readyz")
	t.Logf("fleet healthy in %s", time.Since(up).Round(time.Second))
	out := f.must("podman", "inspect", "--format", "{{.State.ExitCode}} {{.State.Status}}", container("migrate"))
	require.Equal(t, "0 exited", strings.TrimSpace(out), "migrate ran once and finished")

	c := &client{t: t, Fleet: fleet.Remote(t, api)}
	c.Tenant()
	product := c.Product(100)
	order := c.buy(product, "ana", "ana@example.test")
	c.waitMail("ana@example.test")
	t.Logf("ticket bought through nginx: order %s", order)

	// A rolling restart of the API under light load: no failed request.
	var failed, served atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := c.tryGet(fmt.Sprintf("/v1/products/%s/availability", product)); err != nil {
					failed.Add(1)
					t.Logf("load %d: %v", i, err)
				} else {
					served.Add(1)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	// As an operator rolls it: one at a time, each back and healthy, then the
	// proxy reloaded (a restarted container has a new address, which nginx
	// resolves when it loads its configuration).
	for _, s := range []string{"api-1", "api-2"} {
		f.must("podman", "restart", "-t", "15", container(s))
		waitHealthy(t, f, container(s))
		f.must("podman", "exec", container("proxy"), "nginx", "-s", "reload")
		time.Sleep(2 * time.Second)
	}
	stop()
	wg.Wait()
	t.Logf("rolling restart: %d requests served, %d failed", served.Load(), failed.Load())
	require.Zero(t, failed.Load(), "no failed request while the API restarted one by one")

	// A worker killed: the other decides what comes next.
	f.must("podman", "kill", "-s", "KILL", container("work-1"))
	c.buy(product, "bea", "bea@example.test")
	t.Logf("decisions resumed after work-1 was killed; deploy test took %s", time.Since(started).Round(time.Second))
}

// checkImage checks what production expects of the image: a non-root
// user, no shell, its labels and health check, at most 70 MB.
func checkImage(t *testing.T, f *engine, image string) {
	out := f.must("podman", "image", "inspect", image)
	var info []struct {
		Size   int64
		Config struct {
			User   string
			Labels map[string]string
		}
		Healthcheck *struct{ Test []string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	require.Len(t, info, 1)
	img := info[0]
	t.Logf("image: %.1f MB, user %s", float64(img.Size)/(1<<20), img.Config.User)
	require.LessOrEqual(t, img.Size, int64(maxImage), "the image is at most 70 MB")
	require.NotEmpty(t, img.Config.User)
	require.NotContains(t, []string{"0", "root", "0:0"}, img.Config.User, "runs as non-root")
	require.Equal(t, version, img.Config.Labels["org.opencontainers.image.revision"])
	require.Equal(t, "boxoffice", img.Config.Labels["org.opencontainers.image.title"])
	require.NotNil(t, img.Healthcheck, "a health check")
	require.Contains(t, strings.Join(img.Healthcheck.Test, " "), "/boxoffice healthcheck")
	// Without a network or a health check timer: these only start a binary.
	start := []string{"run", "--rm", "--network", "none", "--health-cmd", "none"}
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/busybox"} {
		out, err := f.run("podman", append(start, "--entrypoint", sh, image, "-c", "true")...)
		require.Error(t, err, "no %s in the image", sh)
		require.Contains(t, strings.ToLower(out), "no such file or directory", "%s is missing, not failing otherwise", sh)
	}
	out = f.must("podman", append(start, "--entrypoint", "/boxoffice", image, "version")...)
	require.Contains(t, out, version)
}

// waitHealthy runs the container's own health check (podman runs it on a
// systemd timer, which this sandbox has not) until it passes.
func waitHealthy(t *testing.T, f *engine, name string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := f.run("podman", "healthcheck", "run", name)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy: %s", name, out)
		}
		time.Sleep(time.Second)
	}
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered 200: %v", url, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// client calls the fleet through nginx, as a tenant and its buyers do.
type client struct {
	t *testing.T
	*fleet.Fleet
}

func (c *client) tryGet(path string) error {
	resp, err := c.HTTP.Get(api + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", path, resp.StatusCode)
	}
	return nil
}

// buy reserves one number and pays for it, and returns the order's id
// once it is confirmed.
func (c *client) buy(product uuid.UUID, buyer, email string) string {
	c.t.Helper()
	token := c.BuyerToken(buyer)
	res := c.MustCall(http.StatusAccepted, http.MethodPost, "/v1/products/"+product.String()+"/reservations", token,
		map[string]any{"quantity": 1}, "Idempotency-Key", uuid.NewString())
	held := c.poll(res["statusUrl"].(string), token, time.Minute, "HELD", "REJECTED")
	require.Equal(c.t, "HELD", held["status"], "%v", held)
	order := c.MustCall(http.StatusAccepted, http.MethodPost, "/v1/orders", token, map[string]any{"holdId": held["holdId"],
		"paymentMethod": "sim_ok", "email": email}, "Idempotency-Key", uuid.NewString())
	// A provider call that times out leaves the payment UNKNOWN until the
	// reconciler asks the provider (BOXOFFICE_PAYMENT_RESOLVE_AFTER, 1 min).
	done := c.poll("/v1/orders/"+order["id"].(string), token, 3*time.Minute, "CONFIRMED", "FAILED", "EXPIRED")
	require.Equal(c.t, "CONFIRMED", done["status"], "%v", done)
	return order["id"].(string)
}

func (c *client) poll(path, token string, within time.Duration, final ...string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		status, body, err := c.Call(http.MethodGet, path, token, nil)
		if err == nil && status == http.StatusOK {
			for _, f := range final {
				if body["status"] == f {
					return body
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: still %v", path, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitMail waits for a message to to in the mail catcher's inbox.
func (c *client) waitMail(to string) {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.HTTP.Get(inbox + "/api/v1/search?query=" + "to:" + to)
		if err == nil {
			var out struct {
				Messages []struct{ Subject string } `json:"messages"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if len(out.Messages) > 0 {
				c.t.Logf("mail to %s: %q", to, out.Messages[0].Subject)
				return
			}
		}
		if time.Now().After(deadline) {
			all := ""
			if resp, err := c.HTTP.Get(inbox + "/api/v1/messages"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				all = string(b)
			}
			c.t.Fatalf("no mail to %s in the catcher (%v); its messages: %s", to, err, all)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
