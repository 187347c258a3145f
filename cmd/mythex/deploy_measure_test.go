package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckMeasureFlags(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		f    deployFlags
		want string // "" for no error
	}{
		{"nothing asked", deployFlags{}, ""},
		{"measure and report", deployFlags{measureURL: "http://127.0.0.1:1/", report: filepath.Join(dir, "d.html")}, ""},
		{"rate without measure", deployFlags{rateSet: true}, "--rate applies only with --measure"},
		{"measure without a scheme", deployFlags{measureURL: "127.0.0.1:8080"}, "has no http://"},
		{"report not html", deployFlags{report: filepath.Join(dir, "d.txt")}, "ending in .html"},
		{"report in a missing directory", deployFlags{report: filepath.Join(dir, "nope", "d.html")}, "does not exist"},
		{"report is a directory", deployFlags{report: filepath.Join(dir, "x.html")}, ""},
	}
	if err := os.Mkdir(filepath.Join(dir, "x.html"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases[len(cases)-1].want = "is a directory"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkMeasureFlags(c.f)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !isUsageError(err)):
				t.Errorf("error %v, want a usage error with %q", err, c.want)
			}
		})
	}
}
