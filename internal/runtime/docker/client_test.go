package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestConnect_NoEngine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, host string
	}{
		{"missing socket", "unix:///nonexistent/docker.sock"},
		{"closed TCP port", "tcp://127.0.0.1:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Connect(context.Background(), tc.host)
			if !errors.Is(err, ErrNoEngine) || !strings.Contains(err.Error(), strings.TrimPrefix(tc.host, "tcp://")) {
				t.Errorf("Connect(%s) = %v, want ErrNoEngine naming the address", tc.host, err)
			}
		})
	}
	if _, err := Connect(context.Background(), "not a url"); err == nil || errors.Is(err, ErrNoEngine) {
		t.Errorf("malformed host: %v, want a plain error", err)
	}
}
