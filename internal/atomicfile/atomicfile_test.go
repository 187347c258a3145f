package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	cases := []struct {
		name     string
		existing []byte
		data     []byte
		perm     os.FileMode
	}{
		{"new file", nil, []byte("hello\n"), 0o600},
		{"replace", []byte("old content that is longer"), []byte("new"), 0o644},
		{"empty", []byte("x"), []byte{}, 0o600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if tc.existing != nil {
				if err := os.WriteFile(path, tc.existing, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(path, tc.data, tc.perm); err != nil {
				t.Fatalf("Write: %v", err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Errorf("content = %q, want %q", got, tc.data)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.perm {
				t.Errorf("perm = %v, want %v", fi.Mode().Perm(), tc.perm)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file (temp file left behind?)", len(entries))
			}
		})
	}
}

func TestWrite_MissingDir(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "nope", "f"), []byte("x"), 0o600)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}

func TestRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file still there: %v", err)
	}
	if err := Remove(path); err != nil {
		t.Errorf("Remove of a missing file: %v, want nil", err)
	}
}
