package local

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestEndpoint_WrittenThenRead(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadEndpoint(dir); !os.IsNotExist(err) {
		t.Fatalf("no daemon yet: err %v, want not exist", err)
	}
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteToken(dir, tok)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v, %v; want mode 0600", fi, err)
	}
	remove, err := WriteEndpoint(dir, Endpoint{URL: "http://127.0.0.1:1", TokenFile: path, PID: 7})
	if err != nil {
		t.Fatal(err)
	}
	e, err := ReadEndpoint(dir)
	if err != nil || e.URL != "http://127.0.0.1:1" || e.Token != tok || e.PID != 7 {
		t.Fatalf("read %+v, %v", e, err)
	}
	remove()
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); !os.IsNotExist(err) {
		t.Errorf("the announcement stays after remove: %v", err)
	}
}

// TestServe_AnnouncesThenTakesBack: while Serve runs, the state dir names its
// endpoint and token, and the handler answers there; once ctx ends the
// announcement is gone.
func TestServe_AnnouncesThenTakesBack(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan Endpoint, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, dir, "127.0.0.1:0", func(token string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+token {
					w.WriteHeader(http.StatusUnauthorized)
				}
			})
		}, func(e Endpoint) { started <- e })
	}()
	e := <-started
	got, err := ReadEndpoint(dir)
	if err != nil || got.URL != e.URL {
		t.Fatalf("ReadEndpoint = %+v, %v; want %s", got, err, e.URL)
	}
	req, _ := http.NewRequest("GET", got.URL+"/", nil)
	req.Header.Set("Authorization", "Bearer "+got.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with the announced token: %v, %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); !os.IsNotExist(err) {
		t.Errorf("the announcement stays after Serve returned: %v", err)
	}
}
