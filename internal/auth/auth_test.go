package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBearer(t *testing.T) {
	h := Bearer("s3cret", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	cases := []struct {
		name   string
		header string
		want   int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"prefix of token", "Bearer s3cre", http.StatusUnauthorized},
		{"wrong scheme", "Basic s3cret", http.StatusUnauthorized},
		{"right token", "Bearer s3cret", http.StatusTeapot},
		{"lowercase scheme (RFC 9110 case-insensitive)", "bearer s3cret", http.StatusTeapot},
		{"uppercase scheme", "BEARER s3cret", http.StatusTeapot},
		{"two spaces", "Bearer  s3cret", http.StatusTeapot},
		{"scheme only", "Bearer", http.StatusUnauthorized},
		{"scheme and space", "Bearer ", http.StatusUnauthorized},
		{"token case differs", "Bearer S3CRET", http.StatusUnauthorized},
		{"no space", "Bearers3cret", http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/targets", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("status = %d, want %d", w.Code, tc.want)
			}
		})
	}
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(" abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MYTHEX_TEST_TOKEN", "fromenv")
	t.Setenv("MYTHEX_TEST_EMPTY", "")
	cases := []struct {
		name, file, env, want string
		wantErr               error
	}{
		{"file wins", file, "MYTHEX_TEST_TOKEN", "abc", nil},
		{"env", "", "MYTHEX_TEST_TOKEN", "fromenv", nil},
		{"nothing", "", "MYTHEX_TEST_EMPTY", "", ErrNoToken},
		{"empty file", empty, "MYTHEX_TEST_TOKEN", "", ErrNoToken},
		{"missing file", filepath.Join(dir, "nope"), "", "", os.ErrNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadToken(tc.file, tc.env)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Errorf("LoadToken = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestLoadAdminToken(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MYTHEX_TEST_SHORT", "fifteen-bytes!!")
	cases := []struct {
		name, file, env string
		wantErr         error
		wantMsg         string
	}{
		{"16 bytes from a file", good, "", nil, ""},
		{"1 byte from a file names the file and flag", short, "", ErrShortToken, "token file " + short + " (--token-file) has 1 bytes"},
		{"15 bytes from the environment names the variable", "", "MYTHEX_TEST_SHORT", ErrShortToken, "$MYTHEX_TEST_SHORT has 15 bytes"},
		{"no token says how to make one", "", "MYTHEX_TEST_UNSET", ErrNoToken, "openssl rand"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadAdminToken(tc.file, tc.env, "--token-file")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tc.wantMsg)
			}
			if err != nil && !strings.Contains(err.Error(), "openssl rand") {
				t.Errorf("err = %q does not say how to make a token", err)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost:1": true, "[::1]:9": true, "127.0.0.5:1": true,
		":8080": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "nonsense": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
