package state

import (
	"os"
	"path/filepath"
	"testing"
)

func inIndex(dir, id string) bool {
	_, err := os.Stat(filepath.Join(ownedDir(dir), id))
	return err == nil
}

// deadOwner leaves run id as a faber killed while it owned it would: its
// place in the index (unless old: a faber before the index), its
// owner.json, its lock free, and a temporary file; it returns that file.
func deadOwner(t *testing.T, dir, id string, old bool) string {
	t.Helper()
	if err := newRun(t, dir, id).Close(); err != nil {
		t.Fatal(err)
	}
	if !old {
		if err := markOwned(dir, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeOwner(RunDir(dir, id)); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(RunDir(dir, id), ".meta.json.1.tmp")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return tmp
}

// TestOwnedIndex: an open run is in the index of owned runs and a closed
// one is not; once the index is whole, the sweep reads it alone, tidies a
// dead owner's run it lists, and drops the places of runs that were closed
// or are gone, never a live owner's.
func TestOwnedIndex(t *testing.T) {
	dir := t.TempDir()
	live := newRun(t, dir, "live")
	if !inIndex(dir, "live") {
		t.Fatal("an open run is not in the index")
	}
	if err := newRun(t, dir, "closed").Close(); err != nil {
		t.Fatal(err)
	}
	if inIndex(dir, "closed") {
		t.Fatal("a closed run is still in the index")
	}
	dead := deadOwner(t, dir, "dead", false)
	old := deadOwner(t, dir, "old", true) // a faber before the index left it
	markOwnedAll(dir)
	// Places left behind: a run whose owner died between its place in
	// the index and its owner.json (the lock free, no owner.json), and a
	// run pruned since.
	for _, id := range []string{"closed", "pruned"} {
		if err := markOwned(dir, id); err != nil {
			t.Fatal(err)
		}
	}
	CleanDeadRuns(dir, "")
	if _, err := os.Stat(dead); err == nil {
		t.Error("the dead owner's temporary file in a run of the index is left")
	}
	if _, err := os.Stat(old); err != nil {
		t.Error("the sweep looked at a run outside the whole index")
	}
	for id, want := range map[string]bool{"live": true, "dead": true, "closed": false, "pruned": false, "old": false} {
		if inIndex(dir, id) != want {
			t.Errorf("after the sweep, %s in the index: %v, want %v", id, !want, want)
		}
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if inIndex(dir, "live") {
		t.Error("the live run, closed, is still in the index")
	}
}

// TestOwnedIndexFirstSweep: in a state dir whose index is not whole (runs
// of a faber before it), the sweep looks at every run, gives those with an
// owner.json their place, and then marks the index whole.
func TestOwnedIndexFirstSweep(t *testing.T) {
	dir := t.TempDir()
	old := deadOwner(t, dir, "old", true)
	if err := newRun(t, dir, "closed").Close(); err != nil {
		t.Fatal(err)
	}
	CleanDeadRuns(dir, "")
	if _, err := os.Stat(old); err == nil {
		t.Error("the first sweep left an old dead owner's temporary file")
	}
	if !inIndex(dir, "old") || inIndex(dir, "closed") {
		t.Errorf("after the first sweep: old in the index %v (want true), closed %v (want false)", inIndex(dir, "old"), inIndex(dir, "closed"))
	}
	if _, whole := ownedRuns(dir); !whole {
		t.Error("the first sweep did not mark the index whole")
	}
}
