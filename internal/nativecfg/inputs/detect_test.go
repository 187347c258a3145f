package inputs

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

func TestDetect(t *testing.T) {
	cases := []struct {
		name, file, body, want string
	}{
		{"Kubernetes", "d.yaml", "apiVersion: apps/v1\nkind: Deployment\n", nativecfg.Kubernetes},
		{"Kubernetes after a comment and ---", "d.yaml", "# x\n---\napiVersion: v1\nkind: Service\n", nativecfg.Kubernetes},
		{"compose", "compose.yaml", "services:\n  web:\n    image: x\n", nativecfg.Compose},
		{"Kamal", "deploy.yml", "service: shop\nimage: x\nservers: [a]\n", nativecfg.Kamal},
		{"mythex.yml", "mythex.yml", "load_balancer: {}\ndrain: {}\n", nativecfg.Mythex},
		{"fly.toml", "fly.toml", "app = \"x\"\n", nativecfg.Fly},
		{"Nomad", "api.nomad.hcl", "job \"api\" {}\n", nativecfg.Nomad},
		{"ECS task definition", "task.json", `{"family": "x", "containerDefinitions": []}`, nativecfg.ECS},
		{"elbv2 attributes", "attrs.json", `{"Attributes": []}`, nativecfg.ECS},
		{"ECS JSON on stdin", "-", `{"TargetGroups": []}`, nativecfg.ECS},
		{"fly.toml on stdin", "-", "app = \"x\"\nkill_timeout = 5\n", nativecfg.Fly},
		{"kubectl get -o json", "list.json", `{"apiVersion": "v1", "kind": "List", "items": []}`, nativecfg.Kubernetes},
		{"some other YAML", "values.yaml", "replicaCount: 2\n", Unknown},
		{"some other JSON", "package.json", `{"name": "x"}`, Unknown},
		{"not YAML at all", "x.yaml", "\t{{{", Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect(tc.file, []byte(tc.body)); got != tc.want {
				t.Errorf("Detect = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCollect(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("k8s/web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {template: {spec: {containers: [{name: a, image: x}]}}}\n")
	write("k8s/values.yaml", "replicaCount: 2\n")
	write("README.md", "not read")
	write(".git/config.yaml", "apiVersion: v1\nkind: Secret\n")
	fly := write("fly.toml", "app = \"x\"\nkill_timeout = \"60s\"\n")
	set, err := Collect([]string{dir}, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files[nativecfg.Kubernetes]) != 1 || len(set.Files[nativecfg.Fly]) != 1 || len(set.Skipped) != 1 {
		t.Errorf("files %v skipped %v", set.Files, set.Skipped)
	}
	// publish's call timeout against kill_timeout: 45s < 60s fails.
	subs, err := set.Subjects(Options{CallTimeout: 45 * time.Second})
	if err != nil || len(subs) != 2 {
		t.Fatalf("subs %d err %v", len(subs), err)
	}
	var flyVerdict nativecfg.Verdict
	for _, s := range subs {
		if s.File == fly {
			flyVerdict = nativecfg.Judge(s)
		}
	}
	found := false
	for _, r := range flyVerdict.Results {
		if r.Name == timing.CallTimeoutName && r.Level == timing.Fail {
			found = true
		}
	}
	if !found {
		t.Errorf("fly.toml: no failing call-timeout in %+v", flyVerdict.Results)
	}

	for name, paths := range map[string][]string{
		"an explicit file of no known kind": {filepath.Join(dir, "k8s", "values.yaml")},
		"a path that does not exist":        {filepath.Join(dir, "nope")},
		"a directory of nothing known":      {filepath.Join(dir, ".git", "..", "k8s", "values.yaml")},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Collect(paths, strings.NewReader("")); !errors.Is(err, ErrNotUnderstood) {
				t.Errorf("err = %v, want ErrNotUnderstood", err)
			}
		})
	}
}

func TestCollect_StdinLimit(t *testing.T) {
	big := strings.NewReader(strings.Repeat("a", maxFileSize+1))
	if _, err := Collect([]string{"-"}, big); !errors.Is(err, ErrNotUnderstood) || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("err = %v", err)
	}
}

// TestSubjects_MythexAmongPaths: a mythex.yml given as a path is judged with
// every invariant, keys named by their dotted paths.
func TestSubjects_MythexAmongPaths(t *testing.T) {
	p := filepath.Join("..", "..", "..", "examples", "seed", "before.yml")
	set, err := Collect([]string{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := set.Subjects(Options{})
	if err != nil || len(subs) != 1 || subs[0].Platform != nativecfg.Mythex {
		t.Fatalf("subs %v err %v", subs, err)
	}
	v := nativecfg.Judge(subs[0])
	if v.Level != timing.Fail || v.Findings[0].Invariant != "overlap" || v.Findings[0].Loc.Line == 0 {
		t.Fatalf("verdict %v findings %+v", v.Level, v.Findings)
	}
	// No key alone fixes overlap here (SIGKILL caps the serve period): the
	// fix is a pair, the serve period first.
	fx := v.Findings[0].Fix
	if len(fx) != 2 || fx[0].Loc.Path != "drain.serve_period" || fx[0].To != "63s" ||
		fx[1].Loc.Path != "backend.stop_grace_period" || fx[1].To != "73s" {
		t.Errorf("fix %+v, want serve_period ≥ 63s and stop_grace_period ≥ 73s", fx)
	}
}

// TestCollect_MythexDefinition: examples/local's compose.yaml takes its timings
// from mythex.yml (${MYTHEX_*}). Walking the directory judges the fleet
// configs (mythex.yml, alb.yml) and skips the definition; naming the definition alone is refused with the
// command that checks it, instead of compose-go's blank-duration errors.
func TestCollect_MythexDefinition(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "examples", "local")
	tests := []struct {
		name      string
		paths     []string
		wantErr   string
		wantKinds map[string]int
	}{
		// mythex.yml and alb.yml, the same fleet through the ELBv2 API
		{name: "the example's directory", paths: []string{dir}, wantKinds: map[string]int{nativecfg.Mythex: 2}},
		{name: "the definition alone", paths: []string{filepath.Join(dir, "compose.yaml")}, wantErr: "check that file instead: mythex check -f mythex.yml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Collect(tt.paths, strings.NewReader(""))
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNotUnderstood) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrNotUnderstood with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for k, files := range set.Files {
				got[k] = len(files)
			}
			if !maps.Equal(got, tt.wantKinds) || len(set.Skipped) != 1 {
				t.Fatalf("kinds %v skipped %v, want kinds %v and compose.yaml skipped", got, set.Skipped, tt.wantKinds)
			}
			if _, err := set.Subjects(Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
