package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// syncedStore creates a run with Options.Sync whose syncs are recorded.
func syncedStore(t *testing.T) (*Store, *[]string) {
	t.Helper()
	s, err := Create(t.TempDir(), Meta{RunID: "r", Plan: "p", StartedAt: time.Now()}, []byte("name: p\n"), Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var synced []string
	s.testHook = func(p string) error {
		if name, ok := strings.CutPrefix(p, "sync "); ok {
			synced = append(synced, name)
		}
		return nil
	}
	return s, &synced
}

func newestMem(t *testing.T, s *Store) string {
	t.Helper()
	names, _ := memFiles(s.dbDir())
	if len(names) == 0 {
		t.Fatal("no memtable log")
	}
	return filepath.Base(names[len(names)-1])
}

func TestSyncFollowsANewLog(t *testing.T) {
	if !fsyncCoversMmap {
		t.Skip("Badger's SyncWrites syncs on this platform")
	}
	s, synced := syncedStore(t)
	if err := s.Commit(Change{Events: []Event{ev(1, "step_status")}}); err != nil {
		t.Fatal(err)
	}
	// As if Badger had moved on to a new log by itself.
	var fid int
	if _, err := fmt.Sscanf(newestMem(t, s), "%05d.mem", &fid); err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(s.dbDir(), memFileName(fid+1))
	if err := os.WriteFile(next, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := s.Commit(Change{Events: []Event{ev(2, "step_status")}})
	os.Remove(next)
	if err != nil {
		t.Fatal(err)
	}
	if got := (*synced)[len(*synced)-1]; got != filepath.Base(next) {
		t.Fatalf("synced %v, want %s last", *synced, filepath.Base(next))
	}
}

func TestSyncFailureStopsWrites(t *testing.T) {
	if !fsyncCoversMmap {
		t.Skip("Badger's SyncWrites syncs on this platform")
	}
	s, _ := syncedStore(t)
	boom := errors.New("I/O error")
	s.testHook = func(p string) error {
		if strings.HasPrefix(p, "sync ") {
			return boom
		}
		return nil
	}
	if err := s.Commit(Change{Events: []Event{ev(1, "step_status")}}); !errors.Is(err, boom) {
		t.Fatalf("commit whose sync failed: %v, want %v", err, boom)
	}
	s.testHook = nil
	if err := s.Commit(Change{Events: []Event{ev(1, "step_status")}}); err == nil || !strings.Contains(err.Error(), "no more writes") {
		t.Fatalf("commit after a failed sync: %v, want the store to refuse", err)
	}
}
