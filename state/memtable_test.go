package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenAfterKillDuringOpen: a kill -9 while Badger opens can leave an
// empty memtable file (created, not yet sized). Open must still succeed and
// keep every committed event.
func TestOpenAfterKillDuringOpen(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	if err := s.Commit(Change{Events: []Event{ev(1, "a"), ev(2, "b")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What the killed process left: an empty memtable file with a higher fid.
	empty := filepath.Join(RunDir(dir, "r"), "db", "00099.mem")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, "r", Options{})
	if err != nil {
		t.Fatalf("open after a kill during open: %v", err)
	}
	defer s2.Close()
	snap, err := s2.Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastSeq != 2 {
		t.Fatalf("last seq %d, want 2", snap.LastSeq)
	}
}

// TestOpenAfterKillCreatingValueLog: a kill -9 while Badger creates a
// value log file (between its creation and its sizing) leaves it empty,
// and Badger refuses to open a store with an empty value log ("Open
// existing file ... Create a new file": it takes the file for one it just
// made). Open must still succeed and keep every committed event (CI saw
// TestCrashRecovery fail so, once in many runs).
func TestOpenAfterKillCreatingValueLog(t *testing.T) {
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	if err := s.Commit(Change{Events: []Event{ev(1, "a"), ev(2, "b")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(RunDir(dir, "r"), "db", "000099.vlog")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader of the crashed store before its next owner: not damage.
	if _, err := readStoreEvents("r", RunDir(dir, "r"), 0); errors.Is(err, ErrDamaged) {
		t.Fatalf("a reader takes the empty value log for damage: %v", err)
	}
	s2, err := Open(dir, "r", Options{})
	if err != nil {
		t.Fatalf("open after a kill while a value log was created: %v", err)
	}
	defer s2.Close()
	snap, err := s2.Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastSeq != 2 {
		t.Fatalf("last seq %d, want 2", snap.LastSeq)
	}
}
