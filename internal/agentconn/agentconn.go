// Package agentconn makes the client a deployer (or an operator's command)
// reaches one host agent with, choosing the transport from mythex.yml: an SSH
// connection to the host when hosts[].ssh is set, TLS 1.3 with a client
// certificate when agent_tls is set, plain HTTP on loopback, and plain HTTP
// beyond loopback only when the operator says --insecure-plaintext (with a
// warning, since the agent token lets whoever holds it run programs on the
// host).
package agentconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/transport"
)

// ErrPlaintext is matched by Connect's error for an agent beyond loopback
// with neither SSH nor TLS configured, without --insecure-plaintext.
var ErrPlaintext = errors.New("the agent token would cross the network in plain HTTP")

// ErrClosed is matched by Connect's error after Close.
var ErrClosed = errors.New("agent connection pool closed")

// Options say how far Connect may go.
type Options struct {
	// InsecurePlaintext allows plain HTTP to an agent beyond loopback.
	InsecurePlaintext bool
	// SSH configures SSH connections (known_hosts, identity files).
	SSH transport.SSHOptions
	// Warn receives the plaintext warning. Optional.
	Warn io.Writer
	// Timeout bounds each agent call's HTTP exchange. Default 5 minutes
	// (starts and stops wait on services).
	Timeout time.Duration
}

// Pool holds the connections made for one command (one SSH connection per
// host, reused by every call and every Connect to it; a broken one is made
// again on the next call); Close ends them.
type Pool struct {
	o       Options
	mu      sync.Mutex
	tunnels map[string]*transport.SSHTunnel
	closed  bool
}

// NewPool returns an empty pool.
func NewPool(o Options) *Pool {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	return &Pool{o: o}
}

// Connect returns the client for host h of cfg. For SSH it opens the host's
// connection now, so a refused host key or login is an error here, before
// anything changes. Errors: ErrPlaintext; transport's SSH errors; unreadable
// TLS files.
func (p *Pool) Connect(ctx context.Context, cfg *fleet.Loaded, h fleet.Host, token string) (*agentapi.Client, error) {
	switch {
	case h.SSH != "":
		tun, err := p.tunnel(ctx, h)
		if err != nil {
			return nil, err
		}
		hc := &http.Client{Timeout: p.o.Timeout, Transport: &http.Transport{DialContext: tun.DialContext, MaxIdleConnsPerHost: 4}}
		return agentapi.NewClient("http://"+h.Agent, token, hc), nil
	case cfg.AgentTLS != nil:
		rel := func(f string) string {
			if f == "" || filepath.IsAbs(f) {
				return f
			}
			return filepath.Join(cfg.Dir(), f)
		}
		tc, err := transport.ClientTLS(rel(cfg.AgentTLS.CAFile), rel(cfg.AgentTLS.CertFile), rel(cfg.AgentTLS.KeyFile), cfg.AgentTLS.ServerName)
		if err != nil {
			return nil, fmt.Errorf("%s: agent_tls: %w", cfg.Path, err)
		}
		hc := &http.Client{Timeout: p.o.Timeout, Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}
		return agentapi.NewClient("https://"+h.Agent, token, hc), nil
	case auth.IsLoopback(h.Agent):
		return agentapi.NewClient("http://"+h.Agent, token, &http.Client{Timeout: p.o.Timeout}), nil
	case p.o.InsecurePlaintext:
		if p.o.Warn != nil {
			fmt.Fprintf(p.o.Warn, "warning: host %s: the agent token goes to %s in plain HTTP (--insecure-plaintext); use hosts[].ssh or agent_tls\n", h.Name, h.Agent)
		}
		return agentapi.NewClient("http://"+h.Agent, token, &http.Client{Timeout: p.o.Timeout}), nil
	default:
		return nil, fmt.Errorf("host %s: agent %s is not on loopback: %w; set hosts[].ssh (user@host) or agent_tls in %s, or pass --insecure-plaintext on a network you trust",
			h.Name, h.Agent, ErrPlaintext, cfg.Path)
	}
}

// tunnel returns the pool's SSH connection to h, making it on first use.
func (p *Pool) tunnel(ctx context.Context, h fleet.Host) (*transport.SSHTunnel, error) {
	t, err := transport.ParseSSHTarget(h.SSH)
	if err != nil {
		return nil, fmt.Errorf("host %s: hosts[].ssh: %w", h.Name, err)
	}
	key := t.User + "@" + t.Addr
	p.mu.Lock()
	tun, ok := p.tunnels[key]
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("host %s: %w", h.Name, ErrClosed)
	}
	if ok {
		return tun, nil
	}
	tun, err = transport.DialSSH(ctx, t, p.o.SSH)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if other, ok := p.tunnels[key]; ok || p.closed {
		// Another Connect to the same host won the race, or Close ran.
		tun.Close()
		if p.closed {
			return nil, fmt.Errorf("host %s: %w", h.Name, ErrClosed)
		}
		return other, nil
	}
	if p.tunnels == nil {
		p.tunnels = map[string]*transport.SSHTunnel{}
	}
	p.tunnels[key] = tun
	return tun, nil
}

// Close ends every SSH connection the pool made; later Connects fail with
// ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, t := range p.tunnels {
		errs = append(errs, t.Close())
	}
	p.tunnels, p.closed = nil, true
	return errors.Join(errs...)
}

// Histories reads the deploy history of every host of cfg from its agent
// (at most limit records each; 0: all), in parallel, bounded by ctx. It
// returns the records read and, for each host that could not be read, its
// name and why: one silent host does not hide the others.
func (p *Pool) Histories(ctx context.Context, cfg *fleet.Loaded, token string, limit int) (recs []history.Record, unread []string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range cfg.Hosts {
		wg.Go(func() {
			c, err := p.Connect(ctx, cfg, h, token)
			var rs []history.Record
			if err == nil {
				rs, err = c.History(ctx, limit)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unread = append(unread, fmt.Sprintf("%s (%v)", h.Name, err))
				return
			}
			recs = append(recs, rs...)
		})
	}
	wg.Wait()
	return recs, unread
}
