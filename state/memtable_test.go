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
	// What the killed process left: an empty memtable file with a higher fid.
	dir := storeLeftWith(t, "00099.mem")
	openKeepsBoth(t, dir, "a kill during open")
}

// TestOpenAfterKillCreatingValueLog: a kill -9 while Badger creates a
// value log file (between its creation and its sizing) leaves it empty,
// and Badger refuses to open a store with an empty value log ("Open
// existing file ... Create a new file": it takes the file for one it just
// made). Open must still succeed and keep every committed event (CI saw
// TestCrashRecovery fail so, once in many runs).
func TestOpenAfterKillCreatingValueLog(t *testing.T) {
	dir := storeLeftWith(t, "000099.vlog")
	// A reader of the crashed store before its next owner: not damage.
	if _, err := readStoreEvents("r", RunDir(dir, "r"), 0); errors.Is(err, ErrDamaged) {
		t.Fatalf("a reader takes the empty value log for damage: %v", err)
	}
	openKeepsBoth(t, dir, "a kill while a value log was created")
}

// storeLeftWith is a state dir whose run "r" committed two events and was
// closed, and then got the empty file name in its store, as a kill leaves
// one that Badger created and had not sized yet.
func storeLeftWith(t *testing.T, name string) (dir string) {
	t.Helper()
	dir = t.TempDir()
	s := newRun(t, dir, "r")
	if err := s.Commit(Change{Events: []Event{ev(1, "a"), ev(2, "b")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(RunDir(dir, "r"), "db", name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openKeepsBoth opens run "r" of dir, which must succeed after what (the
// kill storeLeftWith played) and hold both committed events.
func openKeepsBoth(t *testing.T, dir, what string) {
	t.Helper()
	s, err := Open(dir, "r", Options{})
	if err != nil {
		t.Fatalf("open after %s: %v", what, err)
	}
	defer s.Close()
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastSeq != 2 {
		t.Fatalf("last seq %d, want 2", snap.LastSeq)
	}
}
