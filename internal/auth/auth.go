// Package auth guards mythex's admin APIs (load balancer, host agent) with a
// bearer token compared in constant time, and loads that token from a file or
// the environment.
package auth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// ErrNoToken is returned by LoadToken when neither the file nor the environment
// variable gives a token.
var ErrNoToken = errors.New("no token")

// LoadToken returns the token from file when file is not empty, else from the
// environment variable env. Surrounding white space is trimmed. It returns
// ErrNoToken (wrapped, naming both sources) when the result is empty, and the os
// error (wrapped) when file cannot be read.
func LoadToken(file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("%w: token file %s is empty", ErrNoToken, file)
	}
	if t := strings.TrimSpace(os.Getenv(env)); t != "" {
		return t, nil
	}
	return "", fmt.Errorf("%w: set $%s or give a token file", ErrNoToken, env)
}

// Bearer wraps next so that every request must carry "Authorization: Bearer
// <token>"; others get 401 with a WWW-Authenticate header and never reach next.
// The comparison is constant-time. token must not be empty.
func Bearer(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mythex"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether the listen address addr (host:port) binds only to
// the loopback interface. An empty host ("" or ":8080") binds every interface
// and is not loopback. Admin APIs refuse non-loopback addresses unless told
// otherwise.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
