package drain

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
)

// HTTP/2 has no Connection header; net/http turns the handler's
// "Connection: close" into a GOAWAY, so a pooled HTTP/2 connection retires
// too: the next request needs a new connection.
func TestServer_Drain_RetiresHTTP2Connections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newPipeListener()
		srv := &http.Server{Handler: okHandler(), Protocols: new(http.Protocols)}
		srv.Protocols.SetUnencryptedHTTP2(true)
		d, err := New(srv, Config{ServePeriod: testD, NoSignals: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- d.Serve(context.Background(), ln) }()

		tr := &http.Transport{Protocols: new(http.Protocols),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.Dial(ctx) }}
		tr.Protocols.SetUnencryptedHTTP2(true)
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		get := func() {
			t.Helper()
			resp, err := client.Get("http://app/")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
				t.Fatalf("answer %s %d, want HTTP/2 200", resp.Proto, resp.StatusCode)
			}
			synctest.Wait()
		}

		get()
		get()
		if n := ln.accepted.Load(); n != 1 {
			t.Fatalf("%d connections before the drain, want 1 reused", n)
		}
		d.Drain()
		get() // on the pooled connection, answered with a GOAWAY
		get()
		if n := ln.accepted.Load(); n != 2 {
			t.Errorf("%d connections after two requests during the drain, want 2 (the pooled one retired once)", n)
		}
		if err := <-errc; err != nil {
			t.Error(err)
		}
	})
}
