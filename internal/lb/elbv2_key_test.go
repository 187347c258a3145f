package lb

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLoadELBv2Key(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("AKIAX secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("only-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, id, secret string
		ok, fileErr, envErr    bool
	}{
		{"none", "", "", "", false, false, false},
		{"environment", "", "AKIAE", "s", true, false, false},
		{"half the environment", "", "AKIAE", "", false, false, true},
		{"file beats environment", good, "AKIAE", "s", true, false, false},
		{"malformed file", bad, "", "", false, true, false},
		{"missing file", filepath.Join(dir, "nope"), "", "", false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ELBv2KeyIDEnv, tc.id)
			t.Setenv(ELBv2SecretEnv, tc.secret)
			key, ok, err := LoadELBv2Key(tc.file)
			if ok != tc.ok || errors.Is(err, ErrKeyFile) != tc.fileErr || (err != nil && !errors.Is(err, ErrKeyFile)) != tc.envErr {
				t.Fatalf("LoadELBv2Key = %+v, %v, %v", key, ok, err)
			}
			if tc.file == good && key.AccessKeyID != "AKIAX" {
				t.Errorf("key %+v, want the file's", key)
			}
		})
	}
}
