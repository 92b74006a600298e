package run

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// ErrPruneChanged is why a run chosen for pruning was kept: it changed
// before prune held its lock.
var ErrPruneChanged = errors.New("it changed while prune ran")

// PruneDefault are the statuses prune considers when none are named: the
// runs that ended and wait for nothing. pending_failed (a decision) and
// interrupted (a resume) are pruned only when named.
func PruneDefault() []string {
	return []string{exec.RunSuccess, exec.RunFailed, exec.RunRemediationFailed}
}

// PruneRule chooses the runs to prune: a run goes if its status is one of
// Statuses, it is not among the Keep newest of its plan and it started more
// than OlderThan ago (when ByAge) — each part only narrows the choice.
type PruneRule struct {
	Statuses  map[string]bool
	Keep      int // -1: keep no fixed number
	OlderThan time.Duration
	ByAge     bool
}

// PruneRun is one run as prune sees it.
type PruneRun struct {
	RunID       string
	Plan        string
	ParentRunID string
	StartedAt   time.Time
	Status      string // "" when its event log cannot be read: never pruned
	seq         int64  // last event seq when it was chosen
	active      bool   // a live process owns it (or faber cannot tell)
	pid         int
	children    []*PruneRun
}

// PruneItem is a run the rule chose, with its child runs: removed together,
// or kept together (Kept says why).
type PruneItem struct {
	// Runs is the chosen run followed by its child runs, depth first: the
	// order in which they are removed, so that a prune cut short leaves
	// child runs without their parent (complete runs, listed and pruned on
	// their own) rather than a parent that names a child run no longer
	// there.
	Runs []*PruneRun
	// Kept is why the run stays (one of them is active or unreadable), or "".
	Kept string
}

// chooses says whether the rule picks run r, the nth newest (from 0) of its plan.
func (p PruneRule) chooses(r *PruneRun, nth int, now time.Time) bool {
	return p.Statuses[r.Status] &&
		(p.Keep < 0 || nth >= p.Keep) &&
		(!p.ByAge || now.Sub(r.StartedAt) > p.OlderThan)
}

// PrunePlan reads every run of the state dir and returns those the rule
// chooses at time now, newest first, each with its child runs.
func PrunePlan(stateDir string, rule PruneRule, now time.Time) ([]PruneItem, error) {
	tops, err := pruneRuns(stateDir)
	if err != nil {
		return nil, err
	}
	var out []PruneItem
	seen := map[string]int{} // plan -> its runs met so far, newest first
	for _, r := range tops {
		nth := seen[r.Plan]
		seen[r.Plan]++
		if !rule.chooses(r, nth, now) {
			continue
		}
		it := PruneItem{Runs: family(r, map[string]bool{})}
		if a := firstActive(it.Runs); a != nil {
			it.Kept = activeWhy(r, a)
		}
		out = append(out, it)
	}
	return out, nil
}

// Prune removes a chosen run with its child runs, and returns the bytes
// freed. It fails with state.ErrLocked when one of them became active, and
// with ErrPruneChanged when one changed since PrunePlan read it.
func Prune(stateDir string, it PruneItem) (int64, error) {
	ids := make([]string, len(it.Runs))
	for i, m := range it.Runs {
		ids[i] = m.RunID
	}
	return state.RemoveRuns(stateDir, ids, func() error { return unchanged(stateDir, it.Runs) })
}

// pruneRuns reads every run of the state dir and returns the top-level ones,
// newest first, each with its child runs. A child whose parent is gone
// stands alone.
func pruneRuns(stateDir string) ([]*PruneRun, error) {
	metas, err := state.List(stateDir)
	if err != nil {
		return nil, stateProblem(err)
	}
	runs := make([]*PruneRun, 0, len(metas))
	byID := map[string]*PruneRun{}
	for _, m := range metas {
		r := &PruneRun{RunID: m.RunID, Plan: m.Plan, ParentRunID: m.ParentRunID, StartedAt: m.StartedAt, active: true}
		if v, err := View(stateDir, m.RunID); err == nil {
			r.Status, r.seq = v.Run.Status, v.LastSeq
		}
		if o, err := state.OwnerOf(stateDir, m.RunID); err == nil {
			r.active, r.pid = o.Alive, o.PID
		}
		runs = append(runs, r)
		byID[m.RunID] = r
	}
	var tops []*PruneRun
	for _, r := range runs {
		if p := byID[r.ParentRunID]; p != nil && p != r {
			p.children = append(p.children, r)
		} else {
			tops = append(tops, r)
		}
	}
	return tops, nil
}

// family is r followed by its child runs, depth first.
func family(r *PruneRun, seen map[string]bool) []*PruneRun {
	if seen[r.RunID] {
		return nil
	}
	seen[r.RunID] = true
	out := []*PruneRun{r}
	for _, c := range r.children {
		out = append(out, family(c, seen)...)
	}
	return out
}

func firstActive(fam []*PruneRun) *PruneRun {
	for _, m := range fam {
		if m.active || m.Status == "" || m.Status == exec.RunInProgress {
			return m
		}
	}
	return nil
}

// activeWhy says why a chosen run stays.
func activeWhy(r, a *PruneRun) string {
	what := "it is"
	if a != r {
		what = "its child run " + a.RunID + " is"
	}
	switch {
	case a.Status == "":
		return strings.Replace(what, " is", "", 1) + " cannot be read"
	case a.active && a.pid > 0:
		return fmt.Sprintf("%s active in process %d", what, a.pid)
	default:
		return what + " active"
	}
}

// unchanged is called by RemoveRuns while it holds the runs' locks: no owner
// can write to them now, and none may have written since they were chosen
// (a resume, classify or reset writes events), or the choice is stale.
func unchanged(stateDir string, fam []*PruneRun) error {
	for _, m := range fam {
		evs, err := state.ReadEvents(stateDir, m.RunID, m.seq)
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			return ErrPruneChanged
		}
	}
	return nil
}

// RunStatuses are every run status, in the README's order.
func RunStatuses() []string {
	return []string{exec.RunInProgress, exec.RunSuccess, exec.RunFailed, exec.RunRemediationFailed, exec.RunPendingFailed, exec.RunAwaitingApproval, exec.RunInterrupted}
}

// ParseStatuses checks --status values (kong splits comma lists) against the
// statuses valid; an unknown one is a usage error that lists them.
func ParseStatuses(vals, valid []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if !slices.Contains(valid, v) {
			return nil, usage(fmt.Errorf("--status %q is not a run status; use %s", v, strings.Join(valid, ", ")))
		}
		set[v] = true
	}
	return set, nil
}

var agePart = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([a-zµμ]*)`)

// ParseAge reads a duration as Go does (36h, 90m, 1h30m) plus the units d
// (24h) and w (7d), which may be mixed: 1w2d, 1d12h, 1.5d. It must not be
// negative.
func ParseAge(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("an age cannot be negative")
	}
	rest := strings.TrimPrefix(s, "+")
	if rest == "" {
		return 0, errors.New("write an age like 36h, 7d or 2w")
	}
	var total time.Duration
	for rest != "" {
		m := agePart.FindStringSubmatch(rest)
		if m == nil {
			return 0, errors.New("write an age like 36h, 7d or 2w")
		}
		rest = rest[len(m[0]):]
		var d time.Duration
		switch m[2] {
		case "d", "w":
			f, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return 0, errors.New("write an age like 36h, 7d or 2w")
			}
			unit := 24 * time.Hour
			if m[2] == "w" {
				unit *= 7
			}
			if f > float64(1<<62)/float64(unit) {
				return 0, errors.New("too long")
			}
			d = time.Duration(f * float64(unit))
		case "":
			return 0, fmt.Errorf("%q has no unit (use s, m, h, d or w)", m[1])
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
			var err error
			if d, err = time.ParseDuration(m[0]); err != nil {
				return 0, errors.New("too long")
			}
		default:
			return 0, fmt.Errorf("unknown unit %q (use s, m, h, d or w)", m[2])
		}
		if total+d < total {
			return 0, errors.New("too long")
		}
		total += d
	}
	return total, nil
}
