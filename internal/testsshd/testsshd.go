// Package testsshd starts a real OpenSSH server (Debian's openssh-server) on
// a loopback port for tests, with generated host and user keys, so the SSH
// transport is tested against the sshd users run. It is imported only from
// _test.go files.
package testsshd

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Server is a running sshd.
type Server struct {
	// Addr is its 127.0.0.1:port.
	Addr string
	// User is the account keys log in as (the test's own user).
	User string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey
	// KnownHosts is a known_hosts file holding HostKey for Addr.
	KnownHosts string
	// Identity is a private key file authorised to log in.
	Identity string
}

// Options place the server elsewhere than a loopback port of the test's
// own network namespace.
type Options struct {
	// NetNS is a network namespace (ip netns) to run sshd in. Default: the
	// test's own.
	NetNS string
	// ListenAddress is the address sshd listens on. Default 127.0.0.1.
	ListenAddress string
	// Port is its port. Default: a free port of the test's namespace.
	Port int
	// Identity is a private key file to authorise (several servers, one
	// deployer's key). Default: a new key.
	Identity string
}

// Start runs sshd for the test's lifetime, or skips the test saying why when
// it cannot: sshd missing (.ci/run installs openssh-server) or not root.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is Start placed by o: in a network namespace, on an address.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		t.Skipf("no %s (install Debian's openssh-server; .ci/run does as root): %v", sshd, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("sshd for tests needs root (it changes to the user it authenticates)")
	}
	// sshd's privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Skipf("sshd needs /run/sshd: %v", err)
	}
	dir := t.TempDir()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	hostPub, _ := writeKey(t, filepath.Join(dir, "host_key"))
	identity := filepath.Join(dir, "id_ed25519")
	var userPub ssh.PublicKey
	if o.Identity != "" {
		b, err := os.ReadFile(o.Identity)
		if err != nil {
			t.Fatal(err)
		}
		signer, err := ssh.ParsePrivateKey(b)
		if err != nil {
			t.Fatal(err)
		}
		userPub, identity = signer.PublicKey(), o.Identity
	} else {
		userPub, _ = writeKey(t, identity)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(userPub), 0o600); err != nil {
		t.Fatal(err)
	}
	if o.ListenAddress == "" {
		o.ListenAddress = "127.0.0.1"
	}
	port := strconv.Itoa(o.Port)
	if o.Port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ = net.SplitHostPort(l.Addr().String())
		l.Close()
	}
	addr := net.JoinHostPort(o.ListenAddress, port)
	cfg := filepath.Join(dir, "sshd_config")
	conf := fmt.Sprintf(`Port %s
ListenAddress %s
HostKey %s
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
PidFile none
LogLevel VERBOSE
`, port, o.ListenAddress, filepath.Join(dir, "host_key"), authorized)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
	if o.NetNS != "" {
		// ip netns exec execs sshd in the namespace: the pid is sshd's.
		cmd = exec.Command("ip", "netns", "exec", o.NetNS, sshd, "-D", "-e", "-f", cfg)
	}
	logf, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Skipf("start sshd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("sshd log:\n%s", b)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("sshd did not listen on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(20 * time.Millisecond) // polling a port: a condition wait, bounded above
	}
	srv := &Server{Addr: addr, User: u.Username, HostKey: hostPub, Identity: identity}
	srv.KnownHosts = srv.KnownHostsAt(t, addr)
	return srv
}

// KnownHostsAt writes a known_hosts file that lists the server's key for
// addr (host:port: the server's own, or a proxy's in front of it) and
// returns its path.
func (s *Server) KnownHostsAt(t testing.TB, addr string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "known_hosts")
	line := fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(s.HostKey))
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Port is the server's port number.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// writeKey makes an ed25519 key and writes its OpenSSH private key to path.
func writeKey(t testing.TB, path string) (ssh.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp, priv
}

// OtherKnownHosts writes a known_hosts file that lists a different key for
// the server's address (a changed host key) and returns its path.
func (s *Server) OtherKnownHosts(t testing.TB) string { return OtherKnownHostsAt(t, s.Addr) }

// OtherKnownHostsAt writes a known_hosts file that lists a new key, no
// server's, for addr (host:port) and returns its path.
func OtherKnownHostsAt(t testing.TB, addr string) string {
	t.Helper()
	pub, _ := writeKey(t, filepath.Join(t.TempDir(), "other"))
	host, port, _ := net.SplitHostPort(addr)
	p := filepath.Join(t.TempDir(), "known_hosts")
	line := fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(pub))
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
