package state

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSyncEveryCommitOfTheLogItWrote(t *testing.T) {
	s, synced := syncedStore(t)
	for i := int64(1); i <= 3; i++ {
		if err := s.Commit(Change{Events: []Event{ev(i, "step_status")}}); err != nil {
			t.Fatal(err)
		}
	}
	first := newestMem(t, s)
	if len(*synced) != 3 || (*synced)[0] != first || (*synced)[2] != first {
		t.Fatalf("synced %v, want %s three times", *synced, first)
	}
	// A rotation starts a new log (Badger may give it the same name): the
	// next commit syncs that one.
	s.mu.Lock()
	err := s.rotate()
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(Change{Events: []Event{ev(4, "step_status")}}); err != nil {
		t.Fatal(err)
	}
	cur, err := os.Stat(filepath.Join(s.dbDir(), newestMem(t, s)))
	if err != nil {
		t.Fatal(err)
	}
	synced4, err := s.wal.Stat()
	if err != nil {
		t.Fatal(err)
	}
	// The log the commit synced is the live one, not the one that was
	// flushed and removed (whose inode number a new file may reuse).
	if n := synced4.Sys().(*syscall.Stat_t).Nlink; len(*synced) != 4 || n == 0 || !os.SameFile(synced4, cur) {
		t.Fatalf("after rotation: %d syncs, of a file with %d links, the newest log: %v", len(*synced), n, os.SameFile(synced4, cur))
	}
}
