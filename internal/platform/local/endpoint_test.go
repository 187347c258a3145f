package local

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEndpoint_WrittenThenRead(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadEndpoint(dir); !os.IsNotExist(err) {
		t.Fatalf("no daemon yet: err %v, want not exist", err)
	}
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteToken(dir, tok)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v, %v; want mode 0600", fi, err)
	}
	remove, err := WriteEndpoint(dir, Endpoint{URL: "http://127.0.0.1:1", TokenFile: path, PID: 7})
	if err != nil {
		t.Fatal(err)
	}
	e, err := ReadEndpoint(dir)
	if err != nil || e.URL != "http://127.0.0.1:1" || e.Token != tok || e.PID != 7 {
		t.Fatalf("read %+v, %v", e, err)
	}
	remove()
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); !os.IsNotExist(err) {
		t.Errorf("the announcement stays after remove: %v", err)
	}
}
