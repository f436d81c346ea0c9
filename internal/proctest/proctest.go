// Package proctest runs BoxOffice the way production does — real processes
// of the binary against a PostgreSQL cluster — so tests can kill them. The
// binary is built once per test binary (without -race: the processes under
// test are the product, not the test), each process runs in its own process
// group on free ports and is killed with its group when the test ends, and
// each test owns its PostgreSQL cluster (initdb under a temporary directory,
// run as the postgres user when the test runs as root), never the shared
// server: a test may stop or crash it.
package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"boxoffice/internal/config"
	"boxoffice/internal/db"
)

// T is what the harness needs of its caller: a test (testing.TB has it
// all) or a benchmark run standing in for one.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
	FailNow()
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}

// root is the module's directory, found from this file's path.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// binaryOverride, when set, is used instead of building (SetBinary).
var binaryOverride string

// SetBinary makes the harness run bin instead of building one: the
// benchmark passes its own executable. Call it before anything starts.
func SetBinary(bin string) { binaryOverride = bin }

var buildOnce = sync.OnceValues(func() (string, error) {
	if binaryOverride != "" {
		return binaryOverride, nil
	}
	dir, err := os.MkdirTemp("", "boxoffice-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "boxoffice")
	// With the dev tag, as `make run` builds it: the fault scenarios use only
	// serve, work and psp-sim, but a test may want any command.
	cmd := exec.Command("go", "build", "-tags", "dev", "-o", bin, ".")
	cmd.Dir = root()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// Binary returns the path of the boxoffice binary, built once per test
// binary into a temporary directory (removed by CleanupBinary).
func Binary(t T) string {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatalf("build boxoffice: %v", err)
	}
	return bin
}

// CleanupBinary removes the built binary; call it from TestMain.
func CleanupBinary() {
	if binaryOverride != "" {
		return
	}
	if bin, err := buildOnce(); err == nil {
		_ = os.RemoveAll(filepath.Dir(bin))
	}
}

// handedOut is every port FreePort has returned in this test binary. A
// port is bound only when its process starts, so until then a second pick
// could draw it again: a fleet's API port came back as the same process's
// metrics port, and the process could not start.
var handedOut sync.Map

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a process about to start, and never the same port twice. It is drawn
// below Linux's ephemeral range (32768–60999): a port the kernel handed
// out for ":0" is also the next candidate for any outgoing connection, and
// under load one took a metrics port between the pick and the child's bind.
func FreePort(t T) int {
	t.Helper()
	for range 1000 {
		port := 10_000 + rand.IntN(22_000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		_ = ln.Close()
		return port
	}
	t.Fatalf("free port: none free in 10000–31999")
	return 0
}

// Cluster is a PostgreSQL cluster owned by one test.
type Cluster struct {
	t    T
	bin  string
	dir  string
	Port int
}

// pgBin finds the PostgreSQL server binaries: BOXOFFICE_PG_BIN, then PATH,
// then Debian's /usr/lib/postgresql/<version>/bin (newest first). `make
// test` installs them when missing (infra/dev/postgres.sh).
func pgBin() (string, error) {
	if dir := config.PostgresBinDir(); dir != "" {
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb) found; set BOXOFFICE_PG_BIN or run `make test`, which installs them")
}

// asOwner runs a PostgreSQL tool: as the postgres user when we are root
// (initdb and postgres refuse to run as root).
func asOwner(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// NewCluster creates and starts a private cluster; it is stopped and
// removed when the test ends.
func NewCluster(t T) *Cluster {
	t.Helper()
	bin, err := pgBin()
	if err != nil {
		t.Fatal(err)
	}
	c := newClusterDir(t, bin)
	out, err := asOwner(filepath.Join(bin, "initdb"), "-D", c.data(), "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--no-sync").CombinedOutput()
	if err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.Start()
	return c
}

// newClusterDir makes a cluster's directory (owned by the postgres user
// when we are root) on a free port, removed when the test ends.
func newClusterDir(t T, bin string) *Cluster {
	dir, err := os.MkdirTemp("", "boxoffice-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, dir: dir, Port: FreePort(t)}
	t.Cleanup(func() {
		_ = asOwner(filepath.Join(bin, "pg_ctl"), "-D", c.data(), "-m", "immediate", "-w", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("the postgres user is needed to run a cluster as root: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// tool is one of the installation's client programs (pg_basebackup,
// psql…): beside initdb, or beside the real postgres when the bin folder
// holds only links to the server.
func (c *Cluster) tool(name string) string {
	if p := filepath.Join(c.bin, name); fileExists(p) {
		return p
	}
	return filepath.Join(c.installBin(), name)
}

// installBin is the installation's own bin folder: where the postgres that
// c.bin names really is.
func (c *Cluster) installBin() string {
	exe, err := filepath.EvalSymlinks(filepath.Join(c.bin, "postgres"))
	if err != nil {
		return c.bin
	}
	return filepath.Dir(exe)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Replicate makes this cluster a primary with a synchronous standby: every
// commit waits until the standby has it (synchronous_standby_names = '*',
// set with ALTER SYSTEM so that a promoted standby can clear it), and
// returns the standby — a base backup (pg_basebackup -R) streaming from
// this cluster, started on a port of its own.
func (c *Cluster) Replicate() *Cluster {
	c.t.Helper()
	c.psql(`ALTER SYSTEM SET synchronous_standby_names = '*'`)
	c.psql(`SELECT pg_reload_conf()`)
	s := newClusterDir(c.t, c.bin)
	out, err := asOwner(c.tool("pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres",
		"-D", s.data(), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync").CombinedOutput()
	if err != nil {
		c.t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	s.Start()
	return s
}

// Promote ends the standby's recovery (pg_ctl promote) and clears
// synchronous_standby_names it inherited: with no standby of its own, every
// commit would wait forever.
func (c *Cluster) Promote() {
	c.t.Helper()
	out, err := asOwner(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-w", "promote").CombinedOutput()
	if err != nil {
		c.t.Fatalf("promote: %v\n%s", err, out)
	}
	c.psql(`ALTER SYSTEM SET synchronous_standby_names = ''`)
	c.psql(`SELECT pg_reload_conf()`)
}

// Dump writes a consistent snapshot of database name to file (pg_dump's
// custom format), as a nightly or pre-sale backup would.
func (c *Cluster) Dump(name, file string) {
	c.t.Helper()
	out, err := asOwner(c.tool("pg_dump"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres",
		"-Fc", "-f", file, name).CombinedOutput()
	if err != nil {
		c.t.Fatalf("pg_dump: %v\n%s", err, out)
	}
}

// Restore loads a Dump into database name (created empty first).
func (c *Cluster) Restore(file, name string) {
	c.t.Helper()
	c.URL(name)
	out, err := asOwner(c.tool("pg_restore"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres",
		"-d", name, "--exit-on-error", "--no-owner", file).CombinedOutput()
	if err != nil {
		c.t.Fatalf("pg_restore: %v\n%s", err, out)
	}
}

// Dir is a folder of the cluster's own (owned by the postgres user), for
// files its tools write.
func (c *Cluster) Dir() string { return c.dir }

// psql runs one statement on the cluster's postgres database.
func (c *Cluster) psql(sql string) string {
	c.t.Helper()
	out, err := asOwner(c.tool("psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres", "-d", "postgres",
		"-v", "ON_ERROR_STOP=1", "-Atc", sql).CombinedOutput()
	if err != nil {
		c.t.Fatalf("psql %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

// URL is the URL of database name on the cluster (created if missing).
func (c *Cluster) URL(name string) string {
	c.t.Helper()
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.EnsureDatabase(ctx, url); err != nil {
		c.t.Fatalf("create database %s: %v", name, err)
	}
	return url
}

// Start starts the cluster (again) and waits until it accepts connections.
// Each of settings (name=value) overrides the cluster's configuration for
// this run.
func (c *Cluster) Start(settings ...string) {
	c.t.Helper()
	// fsync only matters when the machine crashes, which these tests do
	// not do; synchronous_commit stays on, or a server crash (stop -m
	// immediate) would lose commits the clients were told about.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off "+
		"-c full_page_writes=off", c.Port, c.dir)
	if c.statementsAvailable() {
		// Per-statement timings for the benchmarks (CREATE EXTENSION
		// pg_stat_statements in the database that wants them).
		opts += " -c shared_preload_libraries=pg_stat_statements"
	}
	for _, s := range settings {
		opts += " -c " + s
	}
	out, err := asOwner(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-l", filepath.Join(c.dir, "pg.log"),
		"-w", "-t", "60", "-o", opts, "start").CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "pg.log"))
		c.t.Fatalf("start cluster: %v\n%s\n%s", err, out, log)
	}
}

// statementsAvailable says whether the installation has pg_stat_statements
// (Debian's postgresql package does; a bare build may not).
func (c *Cluster) statementsAvailable() bool {
	return fileExists(filepath.Join(c.installBin(), "..", "lib", "pg_stat_statements.so"))
}

// Stop stops the cluster: mode "fast" (clean) or "immediate" (a crash).
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	out, err := asOwner(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-m", mode, "-w", "stop").CombinedOutput()
	if err != nil {
		c.t.Fatalf("stop cluster: %v\n%s", err, out)
	}
}

// Process is one running boxoffice process.
type Process struct {
	t    T
	Name string
	// Metrics is the process's metrics URL, for the caller to fill in.
	Metrics string
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	err     error
}

// Env is a process's environment beyond the test's own.
type Env map[string]string

// Start runs `boxoffice args...` with env in its own process group. Its
// output goes to a file named after it in the test's temporary directory
// (printed when the test fails); the group is killed when the test ends.
func Start(t T, name string, env Env, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, Name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(Binary(t), args...)
	p.cmd.Env = os.Environ()
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", name, tail(p.Logs(), 8000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// Kill sends SIGKILL to the process group and waits for the process.
func (p *Process) Kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// Pause stops the process group (SIGSTOP): alive, holding its connections,
// doing nothing — as a process frozen by its host would.
func (p *Process) Pause() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGSTOP)
	}
}

// Resume continues a paused process group (SIGCONT).
func (p *Process) Resume() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
	}
}

// Stop sends SIGTERM (a graceful stop) and waits up to timeout, then kills.
func (p *Process) Stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("%s did not stop within %s", p.Name, timeout)
	}
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process ended (nil for exit status 0); call it after
// Exited reports true.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Logs returns the output so far.
func (p *Process) Logs() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// WaitLog waits until the output contains s and returns the output.
func (p *Process) WaitLog(s string, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		logs := p.Logs()
		if strings.Contains(logs, s) {
			return logs
		}
		if p.Exited() || time.Now().After(deadline) {
			p.t.Fatalf("%s: %q not logged (exited: %v)\n%s", p.Name, s, p.Exited(), tail(logs, 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitHTTP waits until url answers 200.
func WaitHTTP(t T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url) //nolint:noctx // a readiness probe
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s (last error %v)", url, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Run runs `boxoffice args...` to completion and returns its output.
func Run(t T, env Env, args ...string) string {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("boxoffice %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// CPU is the processor time the process has used so far (user and system,
// from /proc; 0 where there is none).
func (p *Process) CPU() time.Duration {
	f := procStat(p.cmd.Process.Pid)
	if f == nil {
		return 0
	}
	return ticks(f[11]) + ticks(f[12]) // utime, stime
}

// CPU is the processor time the cluster has used since it started: its
// postmaster's, that of the processes it runs now (backends, the WAL
// writer, autovacuum), and that of those it has reaped — a backend whose
// connection closed adds its time to the postmaster's children's when it
// exits. Only PostgreSQL's processes count: not the other programs of the
// machine, nor the time a virtual machine's host stole from it.
func (c *Cluster) CPU() time.Duration {
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0
	}
	f := procStat(pid)
	if f == nil {
		return 0
	}
	total := ticks(f[11]) + ticks(f[12]) + ticks(f[13]) + ticks(f[14]) // utime, stime, cutime, cstime
	procs, _ := os.ReadDir("/proc")
	parent := strconv.Itoa(pid)
	for _, e := range procs {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cf := procStat(child); cf != nil && cf[1] == parent {
			total += ticks(cf[11]) + ticks(cf[12])
		}
	}
	return total
}

// procStat reads the fields of /proc/<pid>/stat that follow the command
// name (which may hold spaces, in parentheses): the state first, then the
// parent's pid; utime, stime, cutime and cstime are the 12th to 15th. It
// is nil when the process is gone or the line is short.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return nil
	}
	return f
}

// ticks reads a count of clock ticks (USER_HZ, 100 on Linux) as a duration.
func ticks(field string) time.Duration {
	n, _ := strconv.ParseInt(field, 10, 64)
	return time.Duration(n) * time.Second / 100
}

// SelfCPU is the processor time this process has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
