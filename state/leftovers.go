package state

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Leftovers of a faber that died (kill -9, a crash, a power loss): the
// lock it held goes with it (the OS drops a flock with its process), but
// files it was writing stay. Each is removed by the next process that
// can tell it is stale (README "Storage and durability", "Leftovers"):
//
//   - temporary files in a run directory (writeFileAtomic's .<name>.*.tmp,
//     and any *.tmp) by the run's next owner, which holds its lock, or by
//     CleanDeadRuns;
//   - a cache entry's temporary file (cache/.tmp/.entry-<pid>-*) by
//     CleanCacheTemps, once no process has that pid.
//
// The run's lock file itself stays: it is how readers and owners tell a
// live owner from a dead one, and removing it could let two processes
// own the run.

// isTemp says whether a run directory's file is a temporary one.
func isTemp(name string) bool { return strings.HasSuffix(name, ".tmp") }

// removeTemps removes the temporary files in a run directory whose lock
// the caller holds: no one else writes there.
func removeTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type().IsRegular() && isTemp(e.Name()) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// CleanDeadRuns removes, in every run of the state dir but skip whose
// owner is dead (its owner.json is there, its lock free), its temporary
// files and the files named names (a dead owner's control.json). It holds the run's shared lock meanwhile, so that
// no process becomes the run's owner while it removes them; a run that
// has no lock file yet (being created) or no meta.json is left alone.
//
// It looks only at the runs of the index of owned runs (owned.go) once
// that index is whole; until then at every run, giving each run that has
// an owner.json its place in the index, which it then marks whole.
func CleanDeadRuns(stateDir, skip string, names ...string) {
	ids, whole := ownedRuns(stateDir)
	if !whole {
		all, err := RunIDs(stateDir)
		if err != nil {
			return
		}
		ids = all
	}
	for _, id := range ids {
		if id == skip {
			continue
		}
		dir := RunDir(stateDir, id)
		// An owner that closed the run removed owner.json, and left
		// nothing behind.
		if _, err := os.Lstat(filepath.Join(dir, fileOwner)); err != nil {
			if whole {
				dropOwned(stateDir, id)
			}
			continue
		}
		if !whole && markOwned(stateDir, id) != nil {
			return // no index: the next sweep looks at every run again
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var stale []string
		meta := false
		for _, e := range ents {
			n := e.Name()
			meta = meta || n == fileMeta
			if e.Type().IsRegular() && (isTemp(n) || contains(names, n)) {
				stale = append(stale, n)
			}
		}
		if len(stale) == 0 || !meta {
			continue
		}
		f, free, err := readerLock(dir)
		if err != nil || f == nil || !free {
			continue
		}
		for _, n := range stale {
			_ = os.Remove(filepath.Join(dir, n))
		}
		releaseReaderLock(f, free)
	}
	if !whole {
		markOwnedAll(stateDir)
	}
}

// dropOwned removes a run without owner.json from the index: one that is
// gone, or whose lock is free (its owner closed it, or died before its
// owner.json was written). An owner between its place in the index and
// its owner.json holds the lock: its place stays.
func dropOwned(stateDir, id string) {
	dir := RunDir(stateDir, id)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		_ = unmarkOwned(stateDir, id)
		return
	}
	f, free, err := readerLock(dir)
	if err != nil || f == nil || !free {
		return
	}
	defer releaseReaderLock(f, free)
	if _, err := os.Lstat(filepath.Join(dir, fileOwner)); errors.Is(err, os.ErrNotExist) {
		_ = unmarkOwned(stateDir, id)
	}
}

// OwnerDead reports whether a run of the state dir exists and no live
// process owns it (the lock test of OwnerOf).
func OwnerDead(stateDir, runID string) bool {
	if !validRunID(runID) {
		return false
	}
	dir := RunDir(stateDir, runID)
	if _, err := os.Stat(filepath.Join(dir, fileMeta)); err != nil {
		return false
	}
	f, free, err := readerLock(dir)
	if err != nil || f == nil {
		return false
	}
	releaseReaderLock(f, free)
	return free
}

// cacheTempPrefix starts the name of a cache entry's temporary file,
// followed by the writer's pid: .entry-<pid>-<random>.
const cacheTempPrefix = ".entry-"

// CleanCacheTemps removes the cache entries' temporary files whose writer
// is no longer running. They are in cache/.tmp; a faber before it wrote
// them beside the entries, so the first sweep of a state dir looks there
// too, once, and leaves a mark (cacheSweptMark) that it did.
func CleanCacheTemps(stateDir string) {
	tmp := cacheTempDir(stateDir)
	cleanCacheTempsIn(tmp)
	if _, err := os.Lstat(filepath.Join(tmp, cacheSweptMark)); err == nil || !errors.Is(err, os.ErrNotExist) {
		return
	}
	if _, err := os.Stat(CacheDir(stateDir)); err != nil {
		return // no cache yet: nothing of an older faber's either
	}
	cleanCacheTempsIn(CacheDir(stateDir))
	if err := os.MkdirAll(tmp, 0o700); err == nil {
		if f, err := os.OpenFile(filepath.Join(tmp, cacheSweptMark), os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
			f.Close()
		}
	}
}

// cacheSweptMark, in cache/.tmp, says that the cache directory itself was
// swept of an older faber's temporary files.
const cacheSweptMark = ".swept"

// cleanCacheTempsIn removes the temporary files in dir whose writer is gone.
func cleanCacheTempsIn(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), cacheTempPrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil && n > 0 && pidAlive(n) {
			continue
		}
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
