package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// Cache gives the runner the state-dir-wide step cache (exec.CacheStore)
// over package state's files. Sync syncs each entry before it replaces
// the old one, as the run's commits are synced (FABER_SYNC=1).
type Cache struct {
	StateDir string
	Sync     bool
}

// Get reads the entry of a plan's step; nil when there is none. An entry
// that does not decode (written by a newer faber, or damaged) counts as
// none: the step runs, and its success replaces the entry.
func (c Cache) Get(plan, step string) (*exec.CacheEntry, error) {
	b, err := state.CacheGet(c.StateDir, plan, step)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e, err := decodeEntry(b)
	if err != nil || e.Plan != plan || e.Step != step {
		return nil, nil
	}
	return e, nil
}

// Put writes an entry.
func (c Cache) Put(e *exec.CacheEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return state.CachePut(c.StateDir, e.Plan, e.Step, b, c.Sync)
}

// Drop removes the entry of a plan's step.
func (c Cache) Drop(plan, step string) error {
	return state.CacheDrop(c.StateDir, plan, step)
}

// CacheEntries lists the cache's entries (of one plan when plan is set),
// in plan and step order, with the file of each.
func CacheEntries(stateDir, plan string) ([]*exec.CacheEntry, []string, error) {
	files, err := state.CacheList(stateDir)
	if err != nil {
		return nil, nil, stateProblem(fmt.Errorf("read the cache: %w", err))
	}
	var out []*exec.CacheEntry
	var paths []string
	for _, f := range files {
		var e exec.CacheEntry
		if json.Unmarshal(f.Data, &e) != nil {
			e = exec.CacheEntry{Step: "?", Plan: "?"} // listed, so that clear removes it
		}
		if plan != "" && e.Plan != plan {
			continue
		}
		out = append(out, &e)
		paths = append(paths, f.Path)
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ea, eb := out[idx[a]], out[idx[b]]
		if ea.Plan != eb.Plan {
			return ea.Plan < eb.Plan
		}
		return ea.Step < eb.Step
	})
	so := make([]*exec.CacheEntry, len(out))
	sp := make([]string, len(out))
	for i, j := range idx {
		so[i], sp[i] = out[j], paths[j]
	}
	return so, sp, nil
}

// ClearCache removes the entries CacheEntries lists; it returns how many.
func ClearCache(stateDir, plan string) (int, error) {
	_, paths, err := CacheEntries(stateDir, plan)
	if err != nil {
		return 0, err
	}
	for i, p := range paths {
		if err := state.CacheRemove(p); err != nil {
			return i, stateProblem(fmt.Errorf("clear the cache: %w", err))
		}
	}
	return len(paths), nil
}
