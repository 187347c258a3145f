package inputs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

var verdictRe = regexp.MustCompile(`Expected verdict: (PASS|MARGINAL|FAIL)`)

// TestCheck_PublicCaseFixtures runs check on every public case with numbers,
// written as the platform's own files (testdata/cases/<case>-<variant>/),
// and asserts the verdict each fixture's header states.
func TestCheck_PublicCaseFixtures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cases", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 20 {
		t.Fatalf("%d case fixtures, want at least 20", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want := expected(t, dir)
			set, err := Collect([]string{dir}, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			subs, err := set.Subjects(Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(subs) == 0 {
				t.Fatal("no unit to judge")
			}
			got := timing.Pass
			var lines []string
			for _, s := range subs {
				v := nativecfg.Judge(s)
				got = max(got, v.Level)
				for _, f := range v.Findings {
					lines = append(lines, f.Level.String()+" "+f.Invariant+": "+f.Relation+" — "+f.Why)
				}
			}
			if got != want {
				t.Errorf("verdict %v, want %v\n  %s", got, want, strings.Join(lines, "\n  "))
			}
		})
	}
}

func expected(t *testing.T, dir string) timing.Level {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := verdictRe.FindSubmatch(b); m != nil {
			switch string(m[1]) {
			case "FAIL":
				return timing.Fail
			case "MARGINAL":
				return timing.Marginal
			}
			return timing.Pass
		}
	}
	t.Fatalf("%s: no file states an Expected verdict", dir)
	return timing.Pass
}
