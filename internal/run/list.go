package run

import (
	"container/heap"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// ListItem is one run as faber list shows it.
type ListItem struct {
	RunID       string     `json:"run_id"`
	Plan        string     `json:"plan"`
	Status      string     `json:"status"`
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	ParentRunID string     `json:"parent_run_id,omitempty"`
	// Error says why Status is StatusDamaged.
	Error string `json:"error,omitempty"`
}

// StatusDamaged is what list shows for a run whose store (or meta.json or
// events.jsonl) is damaged: it cannot be continued, whatever its event log
// last said.
const StatusDamaged = "damaged"

// ListFilter is what 'faber list --status/--plan/--limit' narrows the runs to.
type ListFilter struct {
	Statuses map[string]bool // nil: any status
	Plan     string          // "": any plan
	Limit    int             // 0: no limit
	Since    time.Time       // zero: any start; else runs started at or after it
}

// ParseSince reads list --since: an age (36h, 7d, 2w: started that long ago
// or later) or a date (2026-11-01, local midnight) or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	d, err := ParseAge(s)
	if err != nil {
		return time.Time{}, usage(fmt.Errorf("--since %q: write an age (36h, 7d, 2w), a date (2026-11-01) or an RFC 3339 time", s))
	}
	return now.Add(-d), nil
}

// NewListFilter checks the flags of 'faber list': --status, --plan and --limit.
func NewListFilter(statuses []string, plan string, limit int) (ListFilter, error) {
	f := ListFilter{Plan: plan, Limit: limit}
	if limit < 0 {
		return f, usage(fmt.Errorf("--limit %d: N must be 1 or more (0, the default, lists every run)", limit))
	}
	if len(statuses) > 0 {
		var err error
		// list shows damaged runs too
		if f.Statuses, err = ParseStatuses(statuses, append(RunStatuses(), StatusDamaged)); err != nil {
			return f, err
		}
	}
	return f, nil
}

// match says whether a run passes --status and --plan.
func (f ListFilter) match(it ListItem) bool {
	return (f.Statuses == nil || f.Statuses[it.Status]) && (f.Plan == "" || it.Plan == f.Plan) &&
		(f.Since.IsZero() || !it.StartedAt.Before(f.Since))
}

// Apply keeps the runs (newest first) that match every filter, each run
// judged on its own: a child run has its own plan and status. Then --limit
// keeps the first N runs that are shown at the top level — those whose
// parent run is not in the result — each with its child runs in the result,
// which do not count: the same runs 'faber list' shows as N trees.
func (f ListFilter) Apply(items []ListItem) []ListItem {
	out := []ListItem{} // never nil: --json prints [] for no runs
	for _, it := range items {
		if f.match(it) {
			out = append(out, it)
		}
	}
	if f.Limit <= 0 {
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
			if n < f.Limit {
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

// listed is one run as 'faber list' shows it, with what it is sorted by.
type listed struct {
	meta state.Meta
	item ListItem
}

// listRun reads one run for 'faber list'. A run whose last owner closed it
// cleanly has a summary that says all of it; any other (running, interrupted
// by a crash, damaged, or whose files changed since the summary was taken)
// is read from its event log, as 'faber status' reads it. ok is false for a
// run that state.List leaves out.
func listRun(stateDir string, runs *state.Runs, runID string) (l listed, ok bool) {
	m, sum, ok := runs.Entry(runID)
	if !ok {
		return l, false
	}
	it := ListItem{RunID: m.RunID, Plan: m.Plan, Status: exec.RunInProgress, StartedAt: m.StartedAt, ParentRunID: m.ParentRunID}
	// A summary in progress was left by an owner that stopped before the
	// run ended: whether it is interrupted depends on the owner now.
	if sum != nil && sum.Status != exec.RunInProgress {
		it.Status, it.FinishedAt = sum.Status, sum.FinishedAt
		return listed{m, it}, true
	}
	v, _, de, err := Load(stateDir, m.RunID)
	if err == nil {
		it.Status = v.Run.Status
		it.FinishedAt = v.Run.FinishedAt
	}
	if de == nil && m.Damaged != nil {
		de = m.Damaged
	}
	if de == nil && err != nil {
		errors.As(err, &de)
	}
	if de != nil {
		it.Status, it.Error = StatusDamaged, de.Error()
	}
	return listed{m, it}, true
}

// List returns the runs of stateDir that 'faber list' shows, newest first:
// those that pass the filter f.
func List(stateDir string, f ListFilter) ([]ListItem, error) {
	items, err := listItems(stateDir, f)
	if err != nil {
		return nil, stateProblem(err)
	}
	return f.Apply(items), nil
}

// listItems returns the runs of stateDir that 'faber list' shows before its
// filters, newest first: every run, or with --limit only those that can be
// among the first N (see newestRuns).
func listItems(stateDir string, f ListFilter) ([]ListItem, error) {
	ids, err := state.RunIDs(stateDir)
	if err != nil {
		return nil, err
	}
	dir := state.OpenRuns(stateDir)
	defer dir.Close()
	var runs []listed
	if f.Limit > 0 {
		runs = newestRuns(stateDir, dir, ids, f)
	} else {
		runs = readRuns(stateDir, dir, ids)
	}
	slices.SortFunc(runs, func(a, b listed) int { return state.NewestFirst(a.meta, b.meta) })
	items := make([]ListItem, len(runs))
	for i, r := range runs {
		items[i] = r.item
	}
	return items, nil
}

// readRuns reads every run, on as many goroutines as there are CPUs: each
// run is a few small files, and a state dir may hold thousands.
func readRuns(stateDir string, dir *state.Runs, ids []string) []listed {
	out := make([]listed, len(ids))
	keep := make([]bool, len(ids))
	parallel(len(ids), func(i int) { out[i], keep[i] = listRun(stateDir, dir, ids[i]) })
	runs := out[:0]
	for i := range out {
		if keep[i] {
			runs = append(runs, out[i])
		}
	}
	return runs
}

// newestRuns reads, for --limit N, only the runs that can be among the
// first N that list shows, and what decides which are: the runs in order of
// a bound on their start (state.StartBound, a stat each), until N top-level
// runs that pass the filters started after every run not yet read could
// have; plus the ancestors of every run read, which decide whether a run is
// top-level (ListFilter.Apply). A child run starts after its parent, so the
// children of a run kept are among the runs read. Given to ListFilter.Apply,
// these runs give what all of them would.
func newestRuns(stateDir string, dir *state.Runs, ids []string, f ListFilter) []listed {
	type cand struct {
		id    string
		bound time.Time
	}
	// A run with no bound is read first.
	never := time.Unix(1<<62, 0)
	cands := make([]cand, len(ids))
	parallel(len(ids), func(i int) {
		b, ok := state.StartBound(stateDir, ids[i])
		if !ok {
			b = never
		}
		cands[i] = cand{ids[i], b}
	})
	slices.SortFunc(cands, func(a, b cand) int { return b.bound.Compare(a.bound) })

	read := map[string]*listed{} // nil: a run list leaves out
	var runs []*listed
	// StartedAt of the top-level runs read that pass the filters, newest
	// on top, until they count: once they started after every run not read.
	tops := &timeHeap{}
	counted := 0
	var load func(id string)
	load = func(id string) {
		if _, done := read[id]; done {
			return
		}
		l, ok := listRun(stateDir, dir, id)
		if !ok {
			read[id] = nil
			return
		}
		read[id] = &l
		runs = append(runs, &l)
		if p := l.item.ParentRunID; p != "" {
			load(p)
		}
		if !f.match(l.item) {
			return
		}
		if p := read[l.item.ParentRunID]; p != nil && f.match(p.item) {
			return // shown under its parent; does not count
		}
		heap.Push(tops, l.item.StartedAt)
	}
	for i, c := range cands {
		load(c.id)
		if i+1 == len(cands) {
			break
		}
		// Every run not read yet started at or before next, which only
		// goes down: a run that started after it stays ahead of them.
		next := cands[i+1].bound
		for tops.Len() > 0 && (*tops)[0].After(next) {
			heap.Pop(tops)
			counted++
		}
		if counted >= f.Limit {
			break
		}
	}
	out := make([]listed, len(runs))
	for i, l := range runs {
		out[i] = *l
	}
	return out
}

// timeHeap is a max-heap of times (container/heap).
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].After(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// parallel calls f(0) ... f(n-1) on as many goroutines as there are CPUs.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				f(i)
			}
		}()
	}
	wg.Wait()
}
