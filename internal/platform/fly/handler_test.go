package fly_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// servedLocal builds the test app and serves a local supervisor through the
// Handler (token "tok"); both stop when t ends.
func servedLocal(t *testing.T) (app string, sup *local.Supervisor, srv *httptest.Server) {
	t.Helper()
	app, err := testbin.Build("../local/testdata/testapp")
	if err != nil {
		t.Fatal(err)
	}
	sup, err = local.New(local.Options{StateDir: t.TempDir(), StopTimeout: 2 * time.Second, RestartDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Close() })
	srv = httptest.NewServer(fly.NewHandler(sup, "tok"))
	t.Cleanup(srv.Close)
	return app, sup, srv
}

// TestHandler_ServesLocalPlatform runs the fly Client against the Handler
// serving the local supervisor: the local platform's daemon path, with real
// processes.
func TestHandler_ServesLocalPlatform(t *testing.T) {
	t.Parallel()
	app, _, srv := servedLocal(t)
	c, err := fly.New(fly.Options{BaseURL: srv.URL, Token: "tok", PrivateAddresses: true, Name: "local"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := c.Create(ctx, "api", platform.Config{Image: app, Restart: platform.Restart{Policy: platform.RestartAlways},
		Env: map[string]string{"TESTAPP_CRASH_AFTER": "100ms"}, Metadata: map[string]string{platform.MetadataRelease: "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Address == "" || m.Release() != "v1" {
		t.Fatalf("created machine over the API = %+v", m)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := c.Get(ctx, "api", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.HasRestartCount && got.RestartCount >= 3 {
			if len(got.Events) > 5 || got.Events[0].Timestamp.Before(got.Events[len(got.Events)-1].Timestamp) {
				t.Errorf("events over the API = %+v", got.Events)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no restarts seen over the API: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.Update(ctx, "api", m.ID, platform.Config{Image: app, Restart: platform.Restart{Policy: platform.RestartAlways}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, "api", m.ID, platform.StateStarted, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, m.Address)
	if err := c.Suspend(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(ctx, "api", m.ID); got.State != platform.StateSuspended {
		t.Errorf("after Suspend over the API: %s", got.State)
	}
	if err := c.Start(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, m.Address)
	if err := c.Destroy(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "api", m.ID); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("Get after Destroy = %v", err)
	}
	bad, _ := fly.New(fly.Options{BaseURL: srv.URL, Token: "wrong"})
	if _, err := bad.List(ctx, "api"); !errors.Is(err, platform.ErrUnauthorized) {
		t.Errorf("wrong token = %v, want ErrUnauthorized", err)
	}
	if _, err := c.Create(ctx, "api", platform.Config{Image: app, Restart: platform.Restart{Policy: "sometimes"}}); !errors.Is(err, platform.ErrInvalid) {
		t.Errorf("bad config = %v, want ErrInvalid", err)
	}
}

func waitHealthy(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered: %v", addr, err)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// TestHandler_LeaseRefreshKeepsTheNonce: the holder's refresh extends its
// lease under the same nonce, as Fly's does, so a holder whose refresh
// answer was lost (a publish cut off by a second signal) can still release
// it; anyone else is refused until then.
func TestHandler_LeaseRefreshKeepsTheNonce(t *testing.T) {
	t.Parallel()
	app, sup, srv := servedLocal(t)
	m, err := sup.Create(context.Background(), "api", platform.Config{Image: app})
	if err != nil {
		t.Fatal(err)
	}
	lease := func(method, nonce string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/v1/apps/api/machines/"+m.ID+"/lease?ttl=60", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		if nonce != "" {
			req.Header.Set(fly.NonceHeader, nonce)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Data struct {
				Nonce string `json:"nonce"`
			} `json:"data"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Data.Nonce
	}
	code, nonce := lease(http.MethodPost, "")
	if code != http.StatusOK || nonce == "" {
		t.Fatalf("acquire: %d, nonce %q", code, nonce)
	}
	if code, again := lease(http.MethodPost, nonce); code != http.StatusOK || again != nonce {
		t.Fatalf("refresh by the holder: %d, nonce %q, want 200 and %q", code, again, nonce)
	}
	if code, _ := lease(http.MethodPost, ""); code != http.StatusConflict {
		t.Fatalf("acquire by another client while held: %d, want 409", code)
	}
	if code, _ := lease(http.MethodDelete, nonce); code != http.StatusOK {
		t.Fatalf("release with the nonce the holder had before its refresh: %d, want 200", code)
	}
	if code, _ := lease(http.MethodPost, ""); code != http.StatusOK {
		t.Fatalf("acquire after the release: %d, want 200", code)
	}
}
