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

// ErrShortToken is returned by CheckToken and LoadAdminToken when a token is
// shorter than MinTokenBytes.
var ErrShortToken = errors.New("token too short")

// MinTokenBytes is the shortest token an admin API accepts: 16 bytes, 128
// bits when it is random (the strength of an AES-128 key; OWASP asks at least
// 64 bits of entropy of a session id). `openssl rand -hex 16` makes a
// 32-byte one.
const MinTokenBytes = 16

// MakeTokenHint tells how to make a good token; error messages end with it.
const MakeTokenHint = "make one with: openssl rand -hex 32 > FILE (or head -c 32 /dev/urandom | base64)"

// CheckToken refuses a token shorter than MinTokenBytes with ErrShortToken
// (wrapped), naming source (a flag, a file, an environment variable) and how
// to make a good one.
func CheckToken(token, source string) error {
	if len(token) < MinTokenBytes {
		hint := MakeTokenHint
		if env, ok := strings.CutPrefix(source, "$"); ok {
			hint = "make one with: export " + env + "=$(openssl rand -hex 32)"
		}
		return fmt.Errorf("%w: the token from %s has %d bytes; an admin API needs at least %d; %s",
			ErrShortToken, source, len(token), MinTokenBytes, hint)
	}
	return nil
}

// LoadAdminToken is LoadToken for the server side of an admin API (the load
// balancer's, an agent's): it also refuses a token shorter than MinTokenBytes
// (ErrShortToken, naming where the token came from). flag names the file's
// flag in messages ("--token-file").
func LoadAdminToken(file, env, flag string) (string, error) {
	t, err := LoadToken(file, env)
	if err != nil {
		return "", err
	}
	source := "$" + env
	if file != "" {
		source = "token file " + file
		if flag != "" {
			source += " (" + flag + ")"
		}
	}
	if err := CheckToken(t, source); err != nil {
		return "", err
	}
	return t, nil
}

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
	if env != "" {
		if t := strings.TrimSpace(os.Getenv(env)); t != "" {
			return t, nil
		}
	}
	return "", fmt.Errorf("%w: set $%s or give a token file; %s", ErrNoToken, env, MakeTokenHint)
}

// Bearer wraps next so that every request must carry "Authorization: Bearer
// <token>"; others get 401 with a WWW-Authenticate header and never reach next.
// The scheme is matched case-insensitively ("bearer", "BEARER"), as RFC 9110
// §11.1 says of every authentication scheme, with one or more spaces before
// the token (RFC 9110's 1*SP); the token itself is compared exactly and in
// constant time. token must not be empty.
func Bearer(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mythex"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the credentials of an Authorization header value of the
// Bearer scheme, in any case; ok false for another scheme or no credentials.
func bearerToken(h string) (string, bool) {
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	rest = strings.TrimLeft(rest, " ")
	return rest, rest != ""
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
