package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/mythex/mythex/internal/nativecfg"
)

// benchDir is where bench/check.sh writes its 1,000 objects; the benchmarks
// skip without it.
func benchFiles(b *testing.B) map[string][]byte {
	dir := os.Getenv("MYTHEX_BENCH_K8S_DIR")
	if dir == "" {
		b.Skip("MYTHEX_BENCH_K8S_DIR not set (bench/check.sh sets it)")
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	files := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		files[p] = data
	}
	return files
}

// BenchmarkParseOnly is the floor: every document unmarshalled with
// sigs.k8s.io/yaml into the API type, nothing judged.
func BenchmarkParseOnly(b *testing.B) {
	files := benchFiles(b)
	for b.Loop() {
		for _, data := range files {
			docs, _ := splitDocs(data)
			for _, d := range docs {
				var dep appsv1.Deployment
				if err := yaml.Unmarshal(d, &dep); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkReadAndJudge is what `mythex check DIR` does with the files.
func BenchmarkReadAndJudge(b *testing.B) {
	files := benchFiles(b)
	for b.Loop() {
		subs, _, err := Read(files)
		if err != nil {
			b.Fatal(err)
		}
		nativecfg.JudgeAll(subs)
	}
}

func TestSplitDocs_Lines(t *testing.T) {
	docs, lines := splitDocs([]byte("a: 1\n---\nb: 2\nc: 3\n---\nd: 4\n"))
	if len(docs) != 3 || fmt.Sprint(lines) != "[1 3 6]" {
		t.Fatalf("docs %q lines %v", docs, lines)
	}
}
