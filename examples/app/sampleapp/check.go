package sampleapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// checkTimeout bounds `app check`: the URL must answer within it.
const checkTimeout = 2 * time.Second

// errNotOK is returned by check when the URL answered with a status other
// than 200.
var errNotOK = errors.New("not 200")

// check GETs url and returns nil when it answers 200 within timeout; otherwise
// errNotOK (wrapped, with the status) or the transport error (wrapped).
func check(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("check %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("check %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("check %s: %w: %s", url, errNotOK, resp.Status)
	}
	return nil
}

// runCheck is `app check URL`: exit 0 when URL answers 200 within 2s, 1 when
// not (the reason on stderr), 2 on bad usage.
func runCheck(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		fmt.Fprintln(stderr, "usage: app check URL   (exit 0 when URL answers 200 within 2s, else 1)")
		return exitUsage
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	if err := check(ctx, client, args[0], checkTimeout); err != nil {
		fmt.Fprintln(stderr, "app:", err)
		return exitFailure
	}
	return exitOK
}
