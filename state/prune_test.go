package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// closedRun makes a finished run (no owner) with a file in logs/.
func closedRun(t *testing.T, dir, id string) {
	t.Helper()
	s := newRun(t, dir, id)
	if err := s.Commit(Change{Events: []Event{ev(1, "run_started")}}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir(), "logs", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), "logs", "a", "attempt-1.out"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestRemoveRunsRemovesEverything(t *testing.T) {
	dir := t.TempDir()
	closedRun(t, dir, "p-1")
	closedRun(t, dir, "c-1")
	closedRun(t, dir, "other-1")
	called := false
	freed, err := RemoveRuns(dir, []string{"p-1", "c-1"}, func() error { called = true; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Error("unchanged was not called")
	}
	if freed < 20000 {
		t.Errorf("freed %d bytes, want at least the two 10 kB logs", freed)
	}
	for _, id := range []string{"p-1", "c-1"} {
		if exists(t, RunDir(dir, id)) {
			t.Errorf("run %s still there", id)
		}
		if _, err := Open(dir, id, Options{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%s) after removal: %v, want ErrNotFound", id, err)
		}
	}
	if exists(t, filepath.Join(dir, dirPruned)) {
		t.Error(".pruned left behind")
	}
	metas, err := List(dir)
	if err != nil || len(metas) != 1 || metas[0].RunID != "other-1" {
		t.Errorf("List after removal = %v, %v; want only other-1", metas, err)
	}
}

func TestRemoveRunsKeepsAnOwnedRun(t *testing.T) {
	dir := t.TempDir()
	closedRun(t, dir, "p-1")
	newRun(t, dir, "c-1") // owned by this process, as by a live faber
	_, err := RemoveRuns(dir, []string{"p-1", "c-1"}, func() error {
		t.Error("unchanged called although a run is owned")
		return nil
	})
	var le *LockedError
	if !errors.As(err, &le) || le.RunID != "c-1" || le.PID != os.Getpid() {
		t.Fatalf("err = %v, want a LockedError for c-1 naming this process", err)
	}
	// all or nothing: the unowned run of the family stays too
	for _, id := range []string{"p-1", "c-1"} {
		if !exists(t, filepath.Join(RunDir(dir, id), fileMeta)) {
			t.Errorf("run %s was touched", id)
		}
	}
	// and its lock was given back: it can be owned again
	s, err := Open(dir, "p-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestRemoveRunsUnchangedRefuses(t *testing.T) {
	dir := t.TempDir()
	closedRun(t, dir, "p-1")
	stale := errors.New("stale")
	_, err := RemoveRuns(dir, []string{"p-1"}, func() error {
		// while RemoveRuns holds the lock no one can take the run
		if _, err := Open(dir, "p-1", Options{}); err == nil {
			t.Error("Open succeeded while RemoveRuns held the lock")
		}
		return stale
	})
	if !errors.Is(err, stale) {
		t.Fatalf("err = %v, want the unchanged error", err)
	}
	if !exists(t, filepath.Join(RunDir(dir, "p-1"), fileMeta)) {
		t.Error("run removed although unchanged refused")
	}
}

func TestRemoveRunsUnknownRun(t *testing.T) {
	dir := t.TempDir()
	closedRun(t, dir, "p-1")
	if _, err := RemoveRuns(dir, []string{"p-1", "nope"}, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if !exists(t, RunDir(dir, "p-1")) {
		t.Error("p-1 removed")
	}
}

func TestRemoveRunsCannotMove(t *testing.T) {
	dir := t.TempDir()
	closedRun(t, dir, "p-1")
	// .pruned is a file: the run cannot be moved aside, so it stays whole
	if err := os.WriteFile(filepath.Join(dir, dirPruned), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RemoveRuns(dir, []string{"p-1"}, nil); err == nil {
		t.Fatal("RemoveRuns succeeded")
	}
	if !exists(t, filepath.Join(RunDir(dir, "p-1"), fileMeta)) {
		t.Error("p-1 damaged")
	}
}

func TestSweepPruned(t *testing.T) {
	dir := t.TempDir()
	if n, err := SweepPruned(dir); n != 0 || err != nil {
		t.Fatalf("SweepPruned of nothing = %d, %v", n, err)
	}
	left := filepath.Join(dir, dirPruned, "p-1.0123abcd", "logs")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "x"), make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := SweepPruned(dir)
	if err != nil || n < 5000 {
		t.Fatalf("SweepPruned = %d, %v; want ≥ 5000 bytes freed", n, err)
	}
	if exists(t, filepath.Join(dir, dirPruned)) {
		t.Error(".pruned left behind")
	}
}
