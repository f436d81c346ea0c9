package proctest

import (
	"io"
	"net"
	"sync"
)

// Gate stands between a process and a server (its database) on a port of
// its own: while open it relays connections both ways; cut, it drops every
// connection it relays and closes each new one at once, as a server that
// went away mid-conversation and then refuses to talk. A test cuts it
// exactly where a restart would be a race.
type Gate struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	open  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewGate relays 127.0.0.1:<free port> to target (host:port), open, until
// the test ends.
func NewGate(t T, target string) *Gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gate: listen: %v", err)
	}
	g := &Gate{ln: ln, target: target, open: true, conns: map[net.Conn]struct{}{}}
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		g.Cut()
		g.wg.Wait()
	})
	return g
}

// Addr is the gate's host:port, to connect to instead of the target.
func (g *Gate) Addr() string { return g.ln.Addr().String() }

// Cut drops every relayed connection and refuses new ones until Open.
func (g *Gate) Cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = false
	for c := range g.conns {
		_ = c.Close()
	}
}

// Open relays new connections again.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
}

func (g *Gate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.wg.Add(1)
		go g.relay(c)
	}
}

// relay pipes one connection to the target and back until either side
// ends or the gate is cut.
func (g *Gate) relay(c net.Conn) {
	defer g.wg.Done()
	defer c.Close()
	if !g.track(c) {
		return
	}
	defer g.untrack(c)
	s, err := net.Dial("tcp", g.target)
	if err != nil {
		return
	}
	defer s.Close()
	if !g.track(s) {
		return
	}
	defer g.untrack(s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(s, c)
		_ = s.Close()
	}()
	_, _ = io.Copy(c, s)
	_ = c.Close()
	<-done
}

// track registers a connection to drop at the next cut, or says the gate
// is cut now.
func (g *Gate) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *Gate) untrack(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.conns, c)
}
