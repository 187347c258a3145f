package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	cleanupImages()
	testbin.Cleanup()
	testkit.Exit(code)
}

var (
	imgOnce  sync.Once
	imgTag   string
	imgErr   error
	imgCli   *client.Client
	imgBuilt []string
)

// daemon returns a client, or skips the test when no Docker daemon answers.
func daemon(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = cli.Ping(ctx)
	}
	if err != nil {
		t.Skipf("skipping: no Docker daemon answers (%v); these tests need one (set DOCKER_HOST or start dockerd)", err)
	}
	return cli
}

// testImage builds, once, a FROM scratch image holding the static testapp
// binary: no registry is involved.
func testImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	imgOnce.Do(func() {
		var bin string
		bin, imgErr = testbin.Build("../local/testdata/testapp")
		if imgErr != nil {
			return
		}
		imgTag = fmt.Sprintf("mythex-test/testapp:%d", time.Now().UnixNano())
		imgErr = buildImage(cli, imgTag, bin)
		imgCli = cli
		imgBuilt = append(imgBuilt, imgTag)
	})
	if imgErr != nil {
		t.Fatal(imgErr)
	}
	return imgTag
}

func buildImage(cli *client.Client, tag, bin string) error {
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	b, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	dockerfile := "FROM scratch\nCOPY app /app\nENTRYPOINT [\"/app\"]\n"
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"app", 0o755, b}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := cli.ImageBuild(context.Background(), &ctxTar, build.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, Version: build.BuilderV1})
	if err != nil {
		return fmt.Errorf("image build: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("image build output: %w", err)
		}
		if msg.Error != "" {
			return fmt.Errorf("image build: %s", msg.Error)
		}
	}
}

func cleanupImages() {
	for _, tag := range imgBuilt {
		_, _ = imgCli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	}
}

// newPlatform returns a Platform and a unique app name whose containers are
// removed at the end.
func newPlatform(t *testing.T) (*Platform, string, string) {
	t.Helper()
	cli := daemon(t)
	img := testImage(t, cli)
	p, err := New(Options{Client: cli, StopTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf("t%d", time.Now().UnixNano()%1e12)
	t.Cleanup(func() {
		cs, _ := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelApp+"="+app))})
		for _, c := range cs {
			_ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
	})
	return p, app, img
}

func appCfg(img string, policy platform.Restart, env map[string]string) platform.Config {
	e := map[string]string{"MYTHEX_APP_LISTEN": "0.0.0.0:8080"}
	for k, v := range env {
		e[k] = v
	}
	return platform.Config{Image: img, Port: 8080, Env: e, Restart: policy}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func healthy(addr string) bool {
	c := &http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func TestPlatform_Lifecycle(t *testing.T) {
	t.Parallel()
	p, app, img := newPlatform(t)
	ctx := context.Background()
	m, err := p.Create(ctx, app, appCfg(img, platform.Restart{Policy: platform.RestartAlways}, nil).WithMetadata(platform.MetadataRelease, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx, app, m.ID, platform.StateStarted, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(ctx, app, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Address == "" || got.Release() != "v1" || !got.HasRestartCount || got.StartedAt.IsZero() || got.InstanceID == "" {
		t.Fatalf("machine = %+v", got)
	}
	waitFor(t, "the app to answer", func() bool { return healthy(got.Address) })
	if len(got.Events) < 2 || got.Events[0].Type != platform.EventStart || got.Events[len(got.Events)-1].Type != platform.EventLaunch {
		t.Errorf("events = %+v, want start ... launch", got.Events)
	}
	if err := p.Stop(ctx, app, m.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = p.Get(ctx, app, m.ID)
	if got.State != platform.StateStopped {
		t.Errorf("after Stop: %s", got.State)
	}
	var exit *platform.Event
	for i := range got.Events {
		if got.Events[i].Type == platform.EventExit {
			exit = &got.Events[i]
			break
		}
	}
	if exit == nil || !exit.Exit.RequestedStop || exit.Exit.Restarting {
		t.Errorf("newest exit after Stop = %+v", exit)
	}
	if err := p.Start(ctx, app, m.ID); err != nil {
		t.Fatal(err)
	}
	before := got.InstanceID
	up, err := p.Update(ctx, app, m.ID, appCfg(img, platform.Restart{Policy: platform.RestartAlways}, map[string]string{"X": "2"}).WithMetadata(platform.MetadataRelease, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	if up.ID != m.ID || up.InstanceID == before || up.Release() != "v2" || up.Config.Env["X"] != "2" {
		t.Errorf("after Update: %+v", up)
	}
	list, err := p.List(ctx, app)
	if err != nil || len(list) != 1 || list[0].ID != m.ID {
		t.Errorf("List after Update = %+v, %v; want the one machine", list, err)
	}
	if _, err := p.cli.ImageInspect(ctx, img); err != nil {
		t.Errorf("the image is gone after an update: %v", err)
	}
	if err := p.Destroy(ctx, app, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, app, m.ID); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("Get after Destroy = %v", err)
	}
}

func TestPlatform_RestartPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		restart  platform.Restart
		wantStop bool
		wantRC   int
	}{
		{"always keeps restarting a crash", platform.Restart{Policy: platform.RestartAlways}, false, 2},
		{"on-failure gives up after max_retries", platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 1}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, app, img := newPlatform(t)
			ctx := context.Background()
			m, err := p.Create(ctx, app, appCfg(img, tt.restart, map[string]string{"TESTAPP_CRASH_AFTER": "300ms", "TESTAPP_EXIT_CODE": "3"}))
			if err != nil {
				t.Fatal(err)
			}
			var got platform.Machine
			waitFor(t, "restarts", func() bool {
				got, err = p.Get(ctx, app, m.ID)
				if err != nil {
					t.Fatal(err)
				}
				if tt.wantStop {
					return got.State == platform.StateStopped && got.RestartCount >= tt.wantRC
				}
				return got.RestartCount >= tt.wantRC
			})
			var exits []platform.Event
			for _, e := range got.Events {
				if e.Type == platform.EventExit {
					exits = append(exits, e)
				}
			}
			if len(exits) == 0 || exits[0].Exit.ExitCode != 3 || exits[0].Exit.RequestedStop {
				t.Fatalf("exits = %+v", exits)
			}
			if tt.wantStop && exits[0].Exit.Restarting {
				t.Errorf("the last exit before giving up says restarting: %+v", exits[0].Exit)
			}
			if len(exits) > 1 && !exits[1].Exit.Restarting {
				t.Errorf("an exit the daemon restarted from lacks restarting: %+v", exits[1].Exit)
			}
			for i := 1; i < len(got.Events); i++ {
				if got.Events[i].Timestamp.After(got.Events[i-1].Timestamp) {
					t.Fatalf("events not newest first: %+v", got.Events)
				}
			}
		})
	}
}

func TestPlatform_MissingImage(t *testing.T) {
	t.Parallel()
	p, app, _ := newPlatform(t)
	_, err := p.Create(context.Background(), app, platform.Config{Image: "mythex-test/absent:never"})
	if !errors.Is(err, platform.ErrInvalid) || !strings.Contains(err.Error(), "never pulls") {
		t.Errorf("Create from a missing image = %v, want ErrInvalid saying no registry is used", err)
	}
	// The gate asks before any machine changes (it used to accept the
	// image and crash-loop with exit 127): image not found, nothing made.
	if err := p.CheckImage(context.Background(), "mythex-test/absent:never"); !errors.Is(err, platform.ErrImageNotFound) {
		t.Errorf("CheckImage of a missing image = %v, want ErrImageNotFound", err)
	}
	if ms, _ := p.List(context.Background(), app); len(ms) != 0 {
		t.Errorf("machines after a missing image: %d", len(ms))
	}
}

// TestGate_OnDocker publishes through the gate onto containers: a good
// release goes live; a release crashing 300 ms after each start is failed
// and the machine's container recreated from the good release's image.
func TestGate_OnDocker(t *testing.T) {
	t.Parallel()
	p, app, img := newPlatform(t)
	store, err := publish.OpenStore(t.TempDir() + "/" + publish.DBFile)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := publish.NewGate(publish.GateConfig{Platform: p, Store: store, LockDir: t.TempDir(),
		Options: publish.Options{LookInterval: time.Second, PollInterval: 300 * time.Millisecond, StableFor: 3 * time.Second, Window: 40 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	always := platform.Restart{Policy: platform.RestartAlways}
	good, err := g.Publish(ctx, publish.Request{App: app, Config: appCfg(img, always, nil)})
	if err != nil || good.Verdict.Status != publish.StatusLive {
		t.Fatalf("good release: %+v, %v", good.Verdict, err)
	}
	bad, err := g.Publish(ctx, publish.Request{App: app, Config: appCfg(img, always, map[string]string{"TESTAPP_CRASH_AFTER": "300ms"})})
	if err != nil || bad.Verdict.Status != publish.StatusFailed || bad.Release.Status != publish.ReleaseRolledBack {
		t.Fatalf("crashing release: %+v, release %s, %v", bad.Verdict, bad.Release.Status, err)
	}
	ms, _ := p.List(ctx, app)
	if len(ms) != 1 || ms[0].Release() != good.Release.ID || ms[0].State != platform.StateStarted || !healthy(ms[0].Address) {
		t.Errorf("after the rollback: %+v", ms)
	}
	t.Logf("crash loop failed in %s; rollback took %s", bad.Elapsed-bad.Rollback.Took, bad.Rollback.Took)
}
