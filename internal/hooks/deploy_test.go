package hooks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
)

func TestDeployHooks_After(t *testing.T) {
	dir := t.TempDir()
	rec := func() []string {
		return []string{"sh", "-c", `echo "$MYTHEX_HOOK $MYTHEX_RESULT $MYTHEX_VERSION $MYTHEX_HOSTS" >> ` + filepath.Join(dir, "log")}
	}
	cfg := &fleet.Loaded{}
	cfg.Hosts = []fleet.Host{{Name: "web-1"}, {Name: "web-2"}}
	cfg.Deploy.Hooks = fleet.Hooks{PostDeploy: rec(), OnFailure: rec(), OnRollback: rec()}
	cases := []struct {
		name string
		res  deploy.Result
		err  error
		want string
	}{
		{"success", deploy.Result{OK: true}, nil, "post_deploy ok v2 web-1,web-2\n"},
		{"failure", deploy.Result{}, errors.New("x"), "on_failure failed v2 web-1,web-2\n"},
		{"rolled back", deploy.Result{Hosts: []deploy.HostResult{{RolledBack: true}}}, errors.New("x"), "on_rollback rolled_back v2 web-1,web-2\non_failure rolled_back v2 web-1,web-2\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(dir, "log"))
			var warn bytes.Buffer
			ForDeploy(cfg, "v2", &warn).After(context.Background(), tc.res, tc.err)
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			if string(b) != tc.want || warn.Len() != 0 {
				t.Fatalf("hooks ran %q (warnings %q); want %q", b, warn.String(), tc.want)
			}
		})
	}
	cfg.Deploy.Hooks.PostDeploy = []string{"false"}
	var warn bytes.Buffer
	ForDeploy(cfg, "v2", &warn).After(context.Background(), deploy.Result{OK: true}, nil)
	if !strings.Contains(warn.String(), "warning: hook post_deploy") {
		t.Errorf("a failing post_deploy was not reported: %q", warn.String())
	}
}
