package buildinfo

import (
	"strings"
	"testing"
)

func TestInfo_String(t *testing.T) {
	cases := []struct {
		name string
		vi   Info
		want string
	}{
		{"no revision", Info{Version: "devel", Go: "go1.25.0"}, "mythex devel go1.25.0"},
		{"clean", Info{Version: "v1.2.0", Revision: "0123456789ab", Go: "go1.25.0"}, "mythex v1.2.0 (0123456789ab) go1.25.0"},
		{"modified", Info{Version: "devel", Revision: "0123456789ab", Modified: true, Go: "go1.25.0"}, "mythex devel (0123456789ab, modified) go1.25.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.vi.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
	if vi := Read(); vi.Version == "" || !strings.HasPrefix(vi.Go, "go1.") {
		t.Errorf("Read() = %+v; want a version and the toolchain", vi)
	}
}
