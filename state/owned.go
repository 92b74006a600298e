package state

import (
	"errors"
	"os"
	"path/filepath"
)

// The index of owned runs: <state-dir>/owned/ holds an empty file named by
// each run whose store a process has opened for writing and not closed,
// made before its owner.json is written and removed after its owner.json
// is (README "Storage and durability", "Leftovers of a dead faber"). The
// sweep of every run and resume (CleanDeadRuns) reads it instead of
// looking at every run of the state dir: a run's start no longer grows
// with the history kept (a one-step run took 64 ms instead of 31 in a
// state dir of 10,000 runs, a look at each one's owner.json).
//
// Runs a faber before the index left owned (killed while they ran) have
// no file in it: the first sweep that finds no ownedAll marker looks at
// every run, as before, gives each run that has an owner.json its file,
// and then writes the marker. A file whose run has no owner.json, or no
// longer exists, is removed by a sweep once the run's lock is free.

const (
	dirOwned = "owned"
	// ownedAll, in dirOwned, says that every owned run has its file there:
	// a sweep may read the index alone. Never a run id (those end in
	// -<time>-<hex>).
	ownedAll = ".all"
)

func ownedDir(stateDir string) string { return filepath.Join(stateDir, dirOwned) }

// markOwned adds a run to the index, before its owner.json is written.
func markOwned(stateDir, runID string) error {
	dir := ownedDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, runID), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// unmarkOwned removes a run from the index, after its owner.json is gone.
func unmarkOwned(stateDir, runID string) error {
	err := os.Remove(filepath.Join(ownedDir(stateDir), runID))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// ownedRuns returns the runs of the index, and whether it is whole (every
// owned run has its file): when it is not, the caller looks at every run.
func ownedRuns(stateDir string) (ids []string, whole bool) {
	ents, err := os.ReadDir(ownedDir(stateDir))
	if err != nil {
		return nil, false
	}
	for _, e := range ents {
		switch n := e.Name(); {
		case n == ownedAll:
			whole = true
		case validRunID(n):
			ids = append(ids, n)
		}
	}
	return ids, whole
}

// markOwnedAll records that the index is whole.
func markOwnedAll(stateDir string) {
	_ = markOwned(stateDir, ownedAll)
}
