package state

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MatchRunIDs returns the ids of the runs in stateDir whose id is exactly
// ref, or else those that start with ref, sorted. A run counts when its
// directory exists under runs/, whatever state its files are in, so that a
// damaged run is still found (and reported as damaged by whoever opens it).
func MatchRunIDs(stateDir, ref string) ([]string, error) {
	if !validRunID(ref) {
		return nil, nil
	}
	if fi, err := os.Stat(RunDir(stateDir, ref)); err == nil && fi.IsDir() {
		return []string{ref}, nil
	}
	entries, err := os.ReadDir(filepath.Join(stateDir, "runs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), ref) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}
