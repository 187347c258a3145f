package lb

import (
	"net"
	"testing"
	"time"
)

func TestConnSet_CloseAllCutsOpenAndLaterConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	s := newConnSet()
	dial := s.dialer(time.Second)
	c, err := dial(ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
	s.closeAll()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read on a cut connection succeeded")
		}
	case <-time.After(waitFor):
		t.Fatal("closeAll did not interrupt a blocked read")
	}
	later, err := dial(ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := later.Write([]byte("x")); err == nil {
		t.Fatal("a connection dialled after closeAll is usable")
	}
	if n := len(s.conns); n != 0 {
		t.Fatalf("%d connections still tracked", n)
	}
}

func TestConnSet_ForgetsClosedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := newConnSet()
	c, err := s.dialer(time.Second)(ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d connections tracked after Close, want 0", n)
	}
}

func TestTarget_ReleaseSignalsIdleOnlyWhenDeregistered(t *testing.T) {
	tg := &Target{idle: make(chan struct{}, 1)}
	tg.admitted.Store(true)
	tg.inFlight.Store(1)
	tg.release()
	select {
	case <-tg.idle:
		t.Fatal("a registered target signalled idle")
	default:
	}
	tg.admitted.Store(false)
	tg.inFlight.Store(2)
	tg.release()
	select {
	case <-tg.idle:
		t.Fatal("signalled idle with a request still in flight")
	default:
	}
	tg.release()
	select {
	case <-tg.idle:
	default:
		t.Fatal("no idle signal when the last request of a draining target ended")
	}
}
