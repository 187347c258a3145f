package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestTunnel_WebSocketUpgrade(t *testing.T) {
	e := startLB(t, testSettings())
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want upgrade", http.StatusBadRequest)
			return
		}
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		line, err := brw.ReadString('\n')
		if err == nil {
			brw.WriteString("echo " + line)
			brw.Flush()
		}
	})))
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitFor))
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "websocket" {
		t.Fatalf("upgrade answer: %d Upgrade=%q, want 101 websocket", resp.StatusCode, resp.Header.Get("Upgrade"))
	}
	st, _ := e.srv.Group.Target("a")
	if st.InFlight != 1 {
		t.Errorf("in flight during the tunnel = %d, want 1", st.InFlight)
	}
	io.WriteString(conn, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "echo ping\n" {
		t.Fatalf("through the tunnel: %q, %v; want echo ping", line, err)
	}
	waitUntil(t, "tunnel released", func() bool { st, _ := e.srv.Group.Target("a"); return st.InFlight == 0 })
}

func TestTunnel_RefusedUpgradeIsRelayed(t *testing.T) {
	e := startLB(t, testSettings())
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no websockets here", http.StatusBadRequest)
	})))
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitFor))
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "no websockets here") {
		t.Fatalf("refused upgrade: %d %q, want the app's 400", resp.StatusCode, b)
	}
	waitUntil(t, "request released", func() bool { st, _ := e.srv.Group.Target("a"); return st.InFlight == 0 })
}

func TestTunnel_RefusedTargetIs502(t *testing.T) {
	e := startLB(t, testSettings())
	e.register("a", closedAddr(t))
	req, _ := http.NewRequest("GET", e.url+"/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantLBError(t, resp, http.StatusBadGateway, "target-refused")
}

func TestTunnel_ClosesAfterIdleTimeout(t *testing.T) {
	s := testSettings()
	s.IdleTimeout = 200 * time.Millisecond
	e := startLB(t, s)
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(io.Discard, brw) // silent until the LB closes
	})))
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitFor))
	// The LB's idle clock starts when the tunnel's last bytes pass, which is
	// after this write: measured from here, the close can come no sooner
	// than the idle timeout. (Measured from reading the 101, it can: the
	// LB's clock started while the client was still parsing.)
	start := time.Now()
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v", err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("read a byte from a silent tunnel")
	}
	if took := time.Since(start); took < s.IdleTimeout {
		t.Fatalf("tunnel closed after %v, before the idle timeout %v", took, s.IdleTimeout)
	}
	waitUntil(t, "tunnel released", func() bool { st, _ := e.srv.Group.Target("a"); return st.InFlight == 0 })
}
