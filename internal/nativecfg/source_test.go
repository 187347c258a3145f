package nativecfg

import (
	"slices"
	"testing"
)

func TestSplitPath(t *testing.T) {
	cases := map[string][]string{
		"a.b[0].c":                       {"a", "b", "0", "c"},
		`metadata.annotations["a.b/c"]`:  {"metadata", "annotations", "a.b/c"},
		`x["k]y"].z`:                     {"x", "k]y", "z"},
		"services.web.stop_grace_period": {"services", "web", "stop_grace_period"},
	}
	for in, want := range cases {
		if got := splitPath(in); !slices.Equal(got, want) {
			t.Errorf("splitPath(%q) = %q, want %q", in, got, want)
		}
	}
	if Key("plain") != ".plain" || Key("alb.ingress.kubernetes.io/x") != `["alb.ingress.kubernetes.io/x"]` {
		t.Error("Key")
	}
}

func TestSource_Line(t *testing.T) {
	doc := []byte("a:\n  b:\n    - x: 1\n    - y:\n        z: 2\n  \"c.d/e\": 3\n")
	src := NewSource(doc, 10)
	cases := map[string]int{
		"a":             10,
		"a.b[1].y.z":    14,
		"a.b[0].x":      12,
		`a["c.d/e"]`:    15,
		"a.b[1].y.nope": 13, // absent: the deepest ancestor present
		"nope":          0,
	}
	for path, want := range cases {
		if got := src.Line(path); got != want {
			t.Errorf("Line(%q) = %d, want %d", path, got, want)
		}
	}
	if NewSource([]byte("{"), 1).Line("a") != 0 {
		t.Error("a document that does not parse has no lines")
	}
}
