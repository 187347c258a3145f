package docker

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMarks_PersistAndDrop(t *testing.T) {
	dir := t.TempDir()
	ms, err := loadMarks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ms.get("a"); got != (mark{}) {
		t.Fatalf("empty marks give %+v", got)
	}
	if err := ms.update("a", func(m *mark) { m.Starts++; m.StoppedFinishedAt = finished }); err != nil {
		t.Fatal(err)
	}
	if err := ms.update("b", func(m *mark) { m.Killed = true }); err != nil {
		t.Fatal(err)
	}
	again, err := loadMarks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.get("a"); got != (mark{Starts: 1, StoppedFinishedAt: finished}) {
		t.Errorf("reloaded a = %+v", got)
	}
	if err := again.drop("a"); err != nil {
		t.Fatal(err)
	}
	if err := again.update("b", func(m *mark) { *m = mark{} }); err != nil {
		t.Fatal(err)
	}
	third, err := loadMarks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(third.m) != 0 {
		t.Errorf("after drop and reset: %+v, want nothing (an empty mark is not kept)", third.m)
	}
}

func TestMarks_CorruptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, marksFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadMarks(dir); err == nil {
		t.Error("a corrupt state file must be an error, not forgotten stops")
	}
}

func TestMarks_FailedWriteChangesNothing(t *testing.T) {
	dir := t.TempDir()
	ms, err := loadMarks(dir)
	if err != nil {
		t.Fatal(err)
	}
	ms.path = filepath.Join(dir, "missing", marksFile) // its directory is gone
	if err := ms.update("a", func(m *mark) { m.Starts = 1 }); err == nil {
		t.Fatal("update into a missing directory succeeded")
	}
	if got := ms.get("a"); got != (mark{}) {
		t.Errorf("after a failed write a = %+v, want unchanged", got)
	}
}
