package testsshd

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy relays TCP connections from a loopback port to a server, and cuts
// every connection it carries on demand: a network that drops SSH
// connections mid-deploy, while the server itself stays up.
type Proxy struct {
	// Addr is the proxy's 127.0.0.1:port.
	Addr string

	to       string
	ln       net.Listener
	mu       sync.Mutex
	conns    map[net.Conn]bool
	accepted int
}

// NewProxy relays to addr until the test ends.
func NewProxy(t testing.TB, addr string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), to: addr, ln: ln, conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	wg.Go(func() { p.serve(&wg) })
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
		wg.Wait()
	})
	return p
}

func (p *Proxy) serve(wg *sync.WaitGroup) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.accepted++
		p.mu.Unlock()
		wg.Go(func() { p.pipe(c, up) })
		wg.Go(func() { p.pipe(up, c) })
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes every connection the proxy carries now and returns how many
// client connections it cut; new ones are relayed again.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	return n
}

// Accepted is how many connections the proxy has relayed so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}
