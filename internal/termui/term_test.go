package termui

import (
	"bytes"
	"os"
	"testing"
)

func TestIsTerminal_NotForPipesAndBuffers(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	cases := []struct {
		name string
		w    interface{ Write([]byte) (int, error) }
	}{
		{"buffer", &bytes.Buffer{}},
		{"pipe", w},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if IsTerminal(tc.w) || Color(tc.w) {
				t.Errorf("%s reads as a terminal", tc.name)
			}
		})
	}
}

func TestSerialized_FilesStayFiles(t *testing.T) {
	if w := Serialized(os.Stderr); w != os.Stderr {
		t.Errorf("Serialized(os.Stderr) = %T, want the file itself (a child process inherits it)", w)
	}
	var b bytes.Buffer
	if _, ok := Serialized(&b).(*lockedWriter); !ok {
		t.Errorf("Serialized(buffer) is not locked")
	}
}
