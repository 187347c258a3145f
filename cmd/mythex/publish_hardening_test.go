package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/termui"
)

// releaseHistory reads `publish history --json` for app api.
func releaseHistory(t *testing.T, dir string) []termui.ReleaseJSON {
	t.Helper()
	code, out, errOut := runCLI(t, "publish", "history", "--app", "api", "--state-dir", dir, "--json")
	if code != 0 {
		t.Fatalf("history: exit %d\n%s", code, errOut)
	}
	var hs []termui.ReleaseJSON
	if err := json.Unmarshal([]byte(out), &hs); err != nil {
		t.Fatalf("history --json %q: %v", out, err)
	}
	return hs
}

func findRelease(hs []termui.ReleaseJSON, id string) (termui.ReleaseJSON, bool) {
	for _, h := range hs {
		if h.Release == id {
			return h, true
		}
	}
	return termui.ReleaseJSON{}, false
}

// localClient is a Machines API client of the test's local platform.
func localClient(t *testing.T, dir string) *fly.Client {
	t.Helper()
	info, err := local.ReadEndpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := fly.New(fly.Options{BaseURL: info.URL, Token: info.Token, PrivateAddresses: true, Name: "local"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPublishCmd_MissingImageIsBadInput: a missing or non-executable image
// on the local platform is exit 2 "image not found", before any machine
// changes and before a release is recorded.
func TestPublishCmd_MissingImageIsBadInput(t *testing.T) {
	t.Parallel() // its own local platform and state dir; every command a process of its own
	bin, dir := localPlatform(t)
	if code, out, errOut := runMythexSplit(t, nil, publishArgs(bin, dir, "v1")...); code != 0 {
		t.Fatalf("publish v1: exit %d\n%s\n%s", code, out, errOut)
	}
	notExec := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{filepath.Join(t.TempDir(), "no-such-app"), notExec} {
		args := publishArgs(bin, dir, "v2")
		for i, a := range args {
			if a == "--image" {
				args[i+1] = img
			}
		}
		code, out, errOut := runMythexSplit(t, nil, args...)
		if code != exitBadUse || !strings.Contains(errOut, "image not found") {
			t.Errorf("publish --image %s: exit %d, want 2 \"image not found\"\n%s\n%s", img, code, out, errOut)
		}
	}
	if hs := releaseHistory(t, dir); len(hs) != 1 {
		t.Errorf("releases after refused images: %+v, want v1 only", hs)
	}
	ms, err := localClient(t, dir).List(context.Background(), "api")
	if err != nil || len(ms) != 1 || ms[0].Release() != "v1" || ms[0].State != "started" {
		t.Errorf("machines after refused images: %+v, %v", ms, err)
	}
}

// startPublish runs `mythex publish` as its own process (signals need one)
// and waits until the release's machines are recorded.
func startPublish(t *testing.T, image, dir, version string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := mythexCommand(nil, publishArgs(image, dir, version, extra...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if h, ok := findRelease(releaseHistory(t, dir), version); ok && len(h.Machines) > 0 {
			return cmd, &out
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish %s never recorded its machines\n%s", version, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("publish did not exit within 60 s of the signal")
	}
	return cmd.ProcessState.ExitCode()
}

// TestPublishCmd_FirstSignalRestoresTheLastGoodRelease: Ctrl-C during an
// in-place publish restores v1 and records v2 as interrupted (it used to
// leave v2 running with v1 still marked current).
func TestPublishCmd_FirstSignalRestoresTheLastGoodRelease(t *testing.T) {
	t.Parallel() // its own local platform and state dir; every command a process of its own
	bin, dir := localPlatform(t)
	if code, out, errOut := runMythexSplit(t, nil, publishArgs(bin, dir, "v1")...); code != 0 {
		t.Fatalf("publish v1: exit %d\n%s\n%s", code, out, errOut)
	}
	cmd, out := startPublish(t, bin, dir, "v2", "--stable-for", "30s", "--window", "60s")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != exitUnknown || !strings.Contains(out.String(), "interrupted") {
		t.Fatalf("interrupted publish: exit %d, want 3 saying interrupted\n%s", code, out.String())
	}
	hs := releaseHistory(t, dir)
	v1, _ := findRelease(hs, "v1")
	v2, _ := findRelease(hs, "v2")
	if !v1.Current || v2.Status != "interrupted" {
		t.Errorf("history after the interrupt: v1 current %v, v2 %s (%s)", v1.Current, v2.Status, v2.Reason)
	}
	ms, err := localClient(t, dir).List(context.Background(), "api")
	if err != nil || len(ms) != 1 || ms[0].Release() != "v1" || !answers(ms[0].Address, "v1") {
		t.Errorf("after the interrupt the machine runs %+v (%v); want v1 answering", ms, err)
	}
}

// TestPublishCmd_SecondSignalLeavesARepairableState: two signals in a row
// stop the publish at once; whatever was left, the repair command restores
// v1.
func TestPublishCmd_SecondSignalLeavesARepairableState(t *testing.T) {
	t.Parallel() // its own local platform and state dir; every command a process of its own
	bin, dir := localPlatform(t)
	if code, out, errOut := runMythexSplit(t, nil, publishArgs(bin, dir, "v1")...); code != 0 {
		t.Fatalf("publish v1: exit %d\n%s\n%s", code, out, errOut)
	}
	cmd, out := startPublish(t, bin, dir, "v2", "--stable-for", "30s", "--window", "60s")
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(20 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(t, cmd); code != exitUnknown {
		t.Fatalf("publish after two signals: exit %d, want 3\n%s", code, out.String())
	}
	if s := out.String(); strings.Contains(s, "aborted") && !strings.Contains(s, "mythex publish reconcile") {
		t.Errorf("an abort that does not say how to repair: %s", s)
	}
	code, o, e := runMythexSplit(t, nil, append([]string{"publish", "reconcile", "--state-dir", dir}, fast...)...)
	if code == exitUnknown {
		t.Fatalf("repair: exit %d\n%s\n%s", code, o, e)
	}
	v1, _ := findRelease(releaseHistory(t, dir), "v1")
	ms, err := localClient(t, dir).List(context.Background(), "api")
	if !v1.Current || err != nil || len(ms) != 1 || ms[0].Release() != "v1" || !answers(ms[0].Address, "v1") {
		t.Errorf("after the repair: v1 current %v, machines %+v (%v); want v1 serving\npublish:\n%s\nrepair (exit %d):\n%s\n%s",
			v1.Current, ms, err, out.String(), code, o, e)
	}
}

// answers reports whether the sample app at addr serves version.
func answers(addr, version string) bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200 && resp.Header.Get("X-Mythex-Version") == version
}
