package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// PruneCmd removes old runs from the state dir.
type PruneCmd struct {
	Keep      *int     `name:"keep" placeholder:"N" help:"Keep the N newest runs of each plan (whatever their status); prune older ones."`
	OlderThan string   `name:"older-than" placeholder:"AGE" help:"Prune only runs started more than AGE ago: a Go duration or days and weeks (36h, 7d, 2w)."`
	Status    []string `name:"status" placeholder:"S" help:"Prune only runs with this status (repeatable, or a comma list); default success, failed, remediation_failed."`
	DryRun    bool     `name:"dry-run" help:"Show what would be removed; remove nothing."`
}

// pruneDefault are the statuses prune considers when --status is not given:
// the runs that ended and wait for nothing. pending_failed (a decision) and
// interrupted (a resume) are pruned only when --status names them.
var pruneDefault = []string{exec.RunSuccess, exec.RunFailed, exec.RunRemediationFailed}

// errChanged is why a run chosen for pruning was kept: it changed before
// prune held its lock.
var errChanged = errors.New("it changed while prune ran")

// pruneRun is one run as prune sees it.
type pruneRun struct {
	meta     state.Meta
	status   string // "" when its event log cannot be read: never pruned
	seq      int64  // last event seq when it was chosen
	active   bool   // a live process owns it (or faber cannot tell)
	pid      int
	children []*pruneRun
}

// pruneRule is what the flags choose: a run goes if its status is one of
// statuses, it is not among the keep newest of its plan and it started
// more than olderThan ago — each flag only narrows the choice.
type pruneRule struct {
	statuses  map[string]bool
	keep      int // -1: no --keep
	olderThan time.Duration
	byAge     bool
}

// rule checks the flags.
func (c *PruneCmd) rule() (pruneRule, error) {
	r := pruneRule{statuses: map[string]bool{}, keep: -1}
	if c.Keep == nil && c.OlderThan == "" {
		return r, withCode(exitUsage, errors.New("prune needs --keep N or --older-than AGE to choose runs (add --dry-run to see what they would remove)"))
	}
	if c.Keep != nil {
		if *c.Keep < 0 {
			return r, withCode(exitUsage, fmt.Errorf("--keep %d: N must be 0 or more", *c.Keep))
		}
		r.keep = *c.Keep
	}
	if c.OlderThan != "" {
		d, err := parseAge(c.OlderThan)
		if err != nil {
			return r, withCode(exitUsage, fmt.Errorf("--older-than %q: %v", c.OlderThan, err))
		}
		r.olderThan, r.byAge = d, true
	}
	for _, s := range pruneDefault {
		r.statuses[s] = true
	}
	if len(c.Status) > 0 {
		var err error
		if r.statuses, err = parseStatuses(c.Status, runStatuses()); err != nil {
			return r, err
		}
		if r.statuses[exec.RunInProgress] {
			return r, withCode(exitUsage, errors.New("--status in_progress: prune never removes a run in progress (interrupted selects runs whose faber died)"))
		}
	}
	return r, nil
}

// chooses says whether the rule picks run r, the nth newest (from 0) of its plan.
func (p pruneRule) chooses(r *pruneRun, nth int, now time.Time) bool {
	return p.statuses[r.status] &&
		(p.keep < 0 || nth >= p.keep) &&
		(!p.byAge || now.Sub(r.meta.StartedAt) > p.olderThan)
}

// pruneRuns reads every run of the state dir and returns the top-level ones,
// newest first, each with its child runs. A child whose parent is gone
// stands alone.
func pruneRuns(g *Globals) ([]*pruneRun, error) {
	metas, err := state.List(g.StateDir)
	if err != nil {
		return nil, withCode(exitState, err)
	}
	runs := make([]*pruneRun, 0, len(metas))
	byID := map[string]*pruneRun{}
	for _, m := range metas {
		r := &pruneRun{meta: m, active: true}
		if v, err := run.View(g.StateDir, m.RunID); err == nil {
			r.status, r.seq = v.Run.Status, v.LastSeq
		}
		if o, err := state.OwnerOf(g.StateDir, m.RunID); err == nil {
			r.active, r.pid = o.Alive, o.PID
		}
		runs = append(runs, r)
		byID[m.RunID] = r
	}
	var tops []*pruneRun
	for _, r := range runs {
		if p := byID[r.meta.ParentRunID]; p != nil && p != r {
			p.children = append(p.children, r)
		} else {
			tops = append(tops, r)
		}
	}
	return tops, nil
}

// Run chooses the runs to prune and removes each with its child runs.
func (c *PruneCmd) Run(g *Globals) error {
	rule, err := c.rule()
	if err != nil {
		return err
	}
	tops, err := pruneRuns(g)
	if err != nil {
		return err
	}
	now := time.Now()
	var failed []string
	count, freed := 0, int64(0)
	if !c.DryRun {
		n, err := state.SweepPruned(g.StateDir)
		freed += n
		if err != nil {
			fmt.Fprintf(g.stderr, "faber: %v\n", err)
			failed = append(failed, "an earlier prune's leftovers")
		}
	}
	seen := map[string]int{} // plan -> its runs met so far, newest first
	for _, r := range tops {
		nth := seen[r.meta.Plan]
		seen[r.meta.Plan]++
		if !rule.chooses(r, nth, now) {
			continue
		}
		fam := family(r, map[string]bool{})
		if a := firstActive(fam); a != nil {
			fmt.Fprintf(g.stderr, "faber: kept %s: %s\n", r.meta.RunID, activeWhy(r, a))
			continue
		}
		if c.DryRun {
			for _, m := range fam {
				freed += state.DiskUsage(state.RunDir(g.StateDir, m.meta.RunID))
				printPruned(g, "would remove", m, now)
			}
			count += len(fam)
			continue
		}
		ids := make([]string, len(fam))
		for i, m := range fam {
			ids[i] = m.meta.RunID
		}
		n, err := state.RemoveRuns(g.StateDir, ids, func() error { return unchanged(g, fam) })
		freed += n
		switch {
		case err == nil:
			for _, m := range fam {
				printPruned(g, "removed", m, now)
			}
			count += len(fam)
		case errors.Is(err, state.ErrLocked):
			fmt.Fprintf(g.stderr, "faber: kept %s: it became active (%v)\n", r.meta.RunID, err)
		case errors.Is(err, errChanged):
			fmt.Fprintf(g.stderr, "faber: kept %s: %v; run prune again to reconsider it\n", r.meta.RunID, err)
		default:
			fmt.Fprintf(g.stderr, "faber: cannot remove run %s: %v\n", r.meta.RunID, err)
			failed = append(failed, r.meta.RunID)
		}
	}
	if c.DryRun {
		fmt.Fprintf(g.stdout, "would remove %d %s, freeing %s (dry run: nothing was removed)\n", count, plural(count, "run", "runs"), humanBytes(freed))
	} else {
		fmt.Fprintf(g.stdout, "removed %d %s, freed %s\n", count, plural(count, "run", "runs"), humanBytes(freed))
	}
	if len(failed) > 0 {
		return withCode(exitState, fmt.Errorf("prune could not remove %s (see above)", strings.Join(failed, ", ")))
	}
	return nil
}

// family is r followed by its child runs, depth first: the order in which
// they are removed, so that a prune cut short leaves child runs without their
// parent (complete runs, listed and pruned on their own) rather than a parent
// that names a child run no longer there.
func family(r *pruneRun, seen map[string]bool) []*pruneRun {
	if seen[r.meta.RunID] {
		return nil
	}
	seen[r.meta.RunID] = true
	out := []*pruneRun{r}
	for _, c := range r.children {
		out = append(out, family(c, seen)...)
	}
	return out
}

func firstActive(fam []*pruneRun) *pruneRun {
	for _, m := range fam {
		if m.active || m.status == "" || m.status == exec.RunInProgress {
			return m
		}
	}
	return nil
}

// activeWhy says why a chosen run stays.
func activeWhy(r, a *pruneRun) string {
	what := "it is"
	if a != r {
		what = "its child run " + a.meta.RunID + " is"
	}
	switch {
	case a.status == "":
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
func unchanged(g *Globals, fam []*pruneRun) error {
	for _, m := range fam {
		evs, err := state.ReadEvents(g.StateDir, m.meta.RunID, m.seq)
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			return errChanged
		}
	}
	return nil
}

func printPruned(g *Globals, verb string, r *pruneRun, now time.Time) {
	child := ""
	if r.meta.ParentRunID != "" {
		child = "; child run of " + r.meta.ParentRunID
	}
	fmt.Fprintf(g.stdout, "%s %s (%s, started %s ago%s)\n", verb, r.meta.RunID, r.status, humanAge(now.Sub(r.meta.StartedAt)), child)
}

var agePart = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([a-zµμ]*)`)

// parseAge reads a duration as Go does (36h, 90m, 1h30m) plus the units d (24h)
// and w (7d), which may be mixed: 1w2d, 1d12h, 1.5d. It must not be negative.
func parseAge(s string) (time.Duration, error) {
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

// humanAge is a short age: 42s, 17m, 5h (below two days), 12d.
func humanAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(max(d, 0)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// humanBytes is a size in decimal units: 812 B, 56.0 kB, 1.2 MB, 3.4 GB.
func humanBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n) / 1000
	for _, u := range []string{"kB", "MB", "GB", "TB"} {
		if f < 1000 || u == "TB" {
			return fmt.Sprintf("%.1f %s", f, u)
		}
		f /= 1000
	}
	return ""
}
