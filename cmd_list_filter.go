package main

import (
	"errors"
	"fmt"

	"github.com/faber-run/faber/internal/run"
)

// listFilter is what 'faber list --status/--plan/--limit' narrows the runs to.
type listFilter struct {
	statuses map[string]bool // nil: any status
	plan     string          // "": any plan
	limit    int             // 0: no limit
}

// newListFilter checks the flags of 'faber list'.
func newListFilter(c *ListCmd) (listFilter, error) {
	f := listFilter{plan: c.Plan, limit: c.Limit}
	if c.Limit < 0 {
		return f, withCode(exitUsage, fmt.Errorf("--limit %d: N must be 1 or more (0, the default, lists every run)", c.Limit))
	}
	if len(c.Status) > 0 {
		var err error
		// list shows damaged runs too
		if f.statuses, err = run.ParseStatuses(c.Status, append(run.RunStatuses(), statusDamaged)); err != nil {
			return f, err
		}
	}
	return f, nil
}

// matching is "matching " when a filter was given, for "no matching runs".
func (f listFilter) matching() string {
	if f.statuses != nil || f.plan != "" {
		return "matching "
	}
	return ""
}

// match says whether a run passes --status and --plan.
func (f listFilter) match(it listItem) bool {
	return (f.statuses == nil || f.statuses[it.Status]) && (f.plan == "" || it.Plan == f.plan)
}

// apply keeps the runs (newest first) that match every filter, each run
// judged on its own: a child run has its own plan and status. Then --limit
// keeps the first N runs that are shown at the top level — those whose
// parent run is not in the result — each with its child runs in the result,
// which do not count: the same runs 'faber list' shows as N trees.
func (f listFilter) apply(items []listItem) []listItem {
	out := []listItem{} // never nil: --json prints [] for no runs
	for _, it := range items {
		if f.match(it) {
			out = append(out, it)
		}
	}
	if f.limit <= 0 {
		return out
	}
	in := map[string]bool{}
	for _, it := range out {
		in[it.RunID] = true
	}
	parent := map[string]string{}
	for _, it := range out {
		if it.ParentRunID != "" && in[it.ParentRunID] {
			parent[it.RunID] = it.ParentRunID
		}
	}
	// top follows parents up; a cycle (hand-edited metadata) ends it.
	top := func(id string) (string, error) {
		for range len(out) + 1 {
			p, ok := parent[id]
			if !ok {
				return id, nil
			}
			id = p
		}
		return "", errors.New("cycle")
	}
	kept := map[string]bool{}
	n := 0
	for _, it := range out {
		if _, ok := parent[it.RunID]; !ok {
			if n < f.limit {
				kept[it.RunID] = true
			}
			n++
		}
	}
	res := out[:0]
	for _, it := range out {
		if t, err := top(it.RunID); err == nil && kept[t] {
			res = append(res, it)
		}
	}
	return res
}
