package hostlock

import (
	"errors"
	"testing"
)

func TestNew_IsTheStateDirsHostLock(t *testing.T) {
	dir := t.TempDir()
	a := New(dir)
	if a.Path() != Path(dir) {
		t.Fatalf("Path = %s, want %s", a.Path(), Path(dir))
	}
	if err := a.TryLock("deploy web-1"); err != nil {
		t.Fatal(err)
	}
	defer a.Unlock()
	if h := Holder(dir); h != "deploy web-1" {
		t.Errorf("Holder = %q", h)
	}
	if err := New(dir).TryLock("watchdog"); !errors.Is(err, ErrHeld) || err.Error() != "host lock is held by deploy web-1" {
		t.Errorf("second TryLock = %v, want \"host lock is held by deploy web-1\"", err)
	}
}
