package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// artifactDir is where tests leave reports and screenshots for people to
// look at: $MYTHEX_ARTIFACTS when set, else a test temporary directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("MYTHEX_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func TestWrite_Synthetic(t *testing.T) {
	for _, c := range []struct {
		name string
		fail int
	}{{"ok", -1}, {"failed", 1}} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, synthetic(3, 60, 200, c.fail)); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			path := filepath.Join(artifactDir(t), "synthetic-"+c.name+".html")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("report: %s (%d bytes)", path, buf.Len())
			for _, want := range []string{`data-chart="requests"`, `data-chart="phases"`, `data-chart="targets"`, `data-chart="versions"`, `data-chart="latency"`} {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %s", want)
				}
			}
		})
	}
}
