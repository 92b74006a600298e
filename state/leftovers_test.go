package state

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestCleanDeadRunsSparesLiveOwners: the sweep removes a dead owner's
// temporary and named files, never those of a run whose owner is alive.
func TestCleanDeadRunsSparesLiveOwners(t *testing.T) {
	dir := t.TempDir()
	newRun(t, dir, "live") // open: its owner is this process
	dead := newRun(t, dir, "dead")
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	// A dead owner: its owner.json stays, its lock is free.
	if err := writeOwner(RunDir(dir, "dead")); err != nil {
		t.Fatal(err)
	}
	plant := func(id string) []string {
		var ps []string
		for _, n := range []string{".meta.json.1.tmp", "control.json", "control.json.tmp"} {
			p := filepath.Join(RunDir(dir, id), n)
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		return ps
	}
	livePaths, deadPaths := plant("live"), plant("dead")
	CleanDeadRuns(dir, "", "control.json")
	for _, p := range livePaths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a live owner's %s was removed", p)
		}
	}
	for _, p := range deadPaths {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a dead owner's %s is left", p)
		}
	}
	if OwnerDead(dir, "live") || !OwnerDead(dir, "dead") || OwnerDead(dir, "none") {
		t.Errorf("OwnerDead: live %v, dead %v, none %v", OwnerDead(dir, "live"), OwnerDead(dir, "dead"), OwnerDead(dir, "none"))
	}
}

// TestCleanCacheTemps removes the temporary files of writers that are gone
// and keeps those of running ones.
func TestCleanCacheTemps(t *testing.T) {
	dir := t.TempDir()
	if err := CachePut(dir, "p", "s", []byte("{}"), false); err != nil {
		t.Fatal(err)
	}
	cache := CacheDir(dir)
	mine := filepath.Join(cache, cacheTempPrefix+strconv.Itoa(os.Getpid())+"-1")
	gone := filepath.Join(cache, cacheTempPrefix+"999999999-1")
	old := filepath.Join(cache, ".entry-x")
	for _, p := range []string{mine, gone, old} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	CleanCacheTemps(dir)
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a running writer's temporary file was removed")
	}
	for _, p := range []string{gone, old} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is left", p)
		}
	}
	if b, err := CacheGet(dir, "p", "s"); err != nil || string(b) != "{}" {
		t.Errorf("the entry itself: %q, %v", b, err)
	}
}

// TestCleanCacheTempsLayout: temporary files are written in cache/.tmp and
// swept there; the cache directory itself, where a faber before wrote them,
// is swept once per state dir (the mark), not at every run.
func TestCleanCacheTempsLayout(t *testing.T) {
	dir := t.TempDir()
	cache := CacheDir(dir)
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	older := filepath.Join(cache, cacheTempPrefix+"999999999-old")
	if err := os.WriteFile(older, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CachePut(dir, "p", "s", []byte("{}"), false); err != nil {
		t.Fatal(err)
	}
	CleanCacheTemps(dir)
	if _, err := os.Stat(older); err == nil {
		t.Errorf("an older faber's temporary file in cache/ is left after the first sweep")
	}
	gone := filepath.Join(cacheTempDir(dir), cacheTempPrefix+"999999999-1")
	later := filepath.Join(cache, cacheTempPrefix+"999999999-later")
	for _, p := range []string{gone, later} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	CleanCacheTemps(dir)
	if _, err := os.Stat(gone); err == nil {
		t.Errorf("a dead writer's file in cache/.tmp is left")
	}
	if _, err := os.Stat(later); err != nil {
		t.Errorf("the second sweep read cache/ itself again: %v", err)
	}
	ents, err := os.ReadDir(cacheTempDir(dir))
	if err != nil || len(ents) != 1 || ents[0].Name() != cacheSweptMark {
		t.Errorf("cache/.tmp holds %v (%v), want only the mark", ents, err)
	}
	list, err := CacheList(dir)
	if err != nil || len(list) != 1 {
		t.Errorf("CacheList: %d entries (%v), want the one", len(list), err)
	}
}
