package state

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// dirPruned holds run directories that RemoveRuns has taken out of runs/ and
// is deleting. Whatever is in it is no longer a run: a deletion cut short (a
// crash, a permission problem) leaves it there for SweepPruned.
const dirPruned = ".pruned"

// RemoveRuns deletes runs as one unit — normally a run and its child runs,
// children first — each with its whole directory: store, meta.json, event
// log, logs and outputs. It returns the disk space freed.
//
// A run is removed only while this process holds its lock exclusively, the
// lock an owner holds for as long as it owns the run: if any of the runs is
// owned by a live process, RemoveRuns removes nothing and returns a
// *LockedError. With every lock held it calls unchanged, which may refuse
// (say, because the run's event log grew since the caller chose it); then too
// nothing is removed and its error is returned. Still holding the locks, it
// renames each run directory out of runs/ into <stateDir>/.pruned, where no
// one looks for runs, and only then releases the locks and deletes the files.
// An owner that was waiting for the lock finds the run gone.
//
// On Windows a directory cannot be renamed while a file in it is open, so
// there each lock is released just before its rename: a resume starting in
// that instant can win the run, and then its files stay where they are
// (RemoveRuns fails) or the resume fails.
//
// If deleting the files fails after the rename, the runs are gone from the
// state dir all the same; the error names the run and the leftover path, and
// SweepPruned retries.
func RemoveRuns(stateDir string, runIDs []string, unchanged func() error) (freed int64, err error) {
	locks := make([]*os.File, len(runIDs))
	release := func(i int) {
		if locks[i] != nil {
			unlock(locks[i])
			locks[i].Close()
			locks[i] = nil
		}
	}
	defer func() {
		for i := range locks {
			release(i)
		}
	}()
	for i, id := range runIDs {
		if err := checkRun(stateDir, id); err != nil {
			return 0, err
		}
		l, err := acquireOwnership(RunDir(stateDir, id), id)
		if err != nil {
			return 0, err
		}
		locks[i] = l
	}
	if unchanged != nil {
		if err := unchanged(); err != nil {
			return 0, err
		}
	}
	pruned := filepath.Join(stateDir, dirPruned)
	if err := os.MkdirAll(pruned, 0o755); err != nil {
		return 0, err // names the path
	}
	var moved []string
	var moveErr error
	for i, id := range runIDs {
		var b [4]byte
		rand.Read(b[:])
		to := filepath.Join(pruned, id+"."+hex.EncodeToString(b[:]))
		err := os.Rename(RunDir(stateDir, id), to)
		if err != nil && runtime.GOOS == "windows" {
			release(i)
			err = renameRetry(RunDir(stateDir, id), to)
		}
		if err != nil {
			moveErr = fmt.Errorf("run %s: move out of the state dir: %w", id, err)
			break
		}
		moved = append(moved, to)
	}
	for i := range locks {
		release(i)
	}
	var errs []error
	if moveErr != nil {
		errs = append(errs, moveErr)
	}
	for _, dir := range moved {
		freed += DiskUsage(dir)
		if err := os.RemoveAll(dir); err != nil {
			freed -= DiskUsage(dir)
			errs = append(errs, fmt.Errorf("run %s was removed from the state dir but not all of its files could be deleted (%w); they are in %s, and the next prune retries", runIDOf(dir), err, dir))
		}
	}
	os.Remove(pruned) // only if empty
	return freed, errors.Join(errs...)
}

// runIDOf recovers the run id from a directory name in .pruned.
func runIDOf(prunedDir string) string {
	name := filepath.Base(prunedDir)
	if ext := filepath.Ext(name); ext != "" {
		return name[:len(name)-len(ext)]
	}
	return name
}

// SweepPruned deletes what an earlier RemoveRuns left in <stateDir>/.pruned
// and returns the disk space freed. None of it is a run any more.
func SweepPruned(stateDir string) (freed int64, err error) {
	pruned := filepath.Join(stateDir, dirPruned)
	entries, err := os.ReadDir(pruned)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look for what an earlier prune left: %w", err)
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(pruned, e.Name())
		n := DiskUsage(p)
		if err := os.RemoveAll(p); err != nil {
			n -= DiskUsage(p)
			errs = append(errs, fmt.Errorf("cannot delete %s, left by an earlier prune: %w", p, err))
		}
		freed += n
	}
	os.Remove(pruned) // only if empty
	return freed, errors.Join(errs...)
}

// DiskUsage returns the disk space used by the files and directories under
// path, symbolic links not followed: allocated blocks where the system says
// (Badger's files are sparse, so their length overstates them), else lengths.
// Entries that vanish or cannot be read while it walks are skipped.
func DiskUsage(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += allocated(fi)
		}
		return nil
	})
	return n
}
