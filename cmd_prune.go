package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/registry"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// PruneCmd removes old runs from the state dir.
type PruneCmd struct {
	Keep      *int     `name:"keep" placeholder:"N" help:"Keep the N newest runs of each plan (whatever their status); prune older ones."`
	OlderThan string   `name:"older-than" placeholder:"AGE" help:"Prune only runs started more than AGE ago: a Go duration or days and weeks (36h, 7d, 2w)."`
	Status    []string `name:"status" placeholder:"S" help:"Prune only runs with this status (repeatable, or a comma list); default success, failed, remediation_failed."`
	DryRun    bool     `name:"dry-run" help:"Show what would be removed; remove nothing."`
	Forget    bool     `name:"forget" help:"Remove DIR (default: this state dir) from the registry of state dirs that faber list --all and faber ui read; its runs stay where they are."`
	Dir       string   `arg:"" optional:"" name:"dir" help:"With --forget: the state dir to forget."`
	JSON      bool     `name:"json" help:"Print {dry_run, removed: [{run_id, plan, status, started_at, parent_run_id?}], kept: [{run_id, reason}], freed_bytes, forgotten: [dirs]} instead of lines (errors stay on stderr)."`

	res *pruneResult // --json: what prune did, printed at the end
}

// pruneResult is prune --json's output.
type pruneResult struct {
	DryRun     bool        `json:"dry_run"`
	Removed    []prunedRun `json:"removed"`
	Kept       []keptRun   `json:"kept"`
	FreedBytes int64       `json:"freed_bytes"`
	Forgotten  []string    `json:"forgotten"`
}

type prunedRun struct {
	RunID       string    `json:"run_id"`
	Plan        string    `json:"plan"`
	Status      string    `json:"status"`
	StartedAt   time.Time `json:"started_at"`
	ParentRunID string    `json:"parent_run_id,omitempty"`
}

type keptRun struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

// kept says on stderr why a run was kept (and records it for --json).
func (c *PruneCmd) kept(g *Globals, id, reason string) {
	fmt.Fprintf(g.stderr, "faber: kept %s: %s\n", id, reason)
	if c.res != nil {
		c.res.Kept = append(c.res.Kept, keptRun{id, reason})
	}
}

// Help explains prune.
func (c *PruneCmd) Help() string {
	return `Removes finished runs (their store, events and logs) from the state dir:
--keep N keeps each plan's N newest, --older-than AGE removes only runs
started longer ago; both together remove what both choose. By default only
success, failed and remediation_failed runs go (--status to choose); an
active run never does, and a child run goes with its parent. --forget
removes a state dir from the registry that faber list --all and faber ui
read; its runs stay.

Examples:
  faber prune --keep 10 --dry-run                 see first
  faber prune --older-than 30d --status failed,interrupted
  faber prune --keep 5 --json | jq '.freed_bytes'
  faber prune --forget ~/old-project/.faber`
}

// rule checks the flags.
func (c *PruneCmd) rule() (run.PruneRule, error) {
	r := run.PruneRule{Statuses: map[string]bool{}, Keep: -1}
	if c.Keep == nil && c.OlderThan == "" {
		return r, withCode(exitUsage, errors.New("prune needs --keep N or --older-than AGE to choose runs (add --dry-run to see what they would remove)"))
	}
	if c.Keep != nil {
		if *c.Keep < 0 {
			return r, withCode(exitUsage, fmt.Errorf("--keep %d: N must be 0 or more", *c.Keep))
		}
		r.Keep = *c.Keep
	}
	if c.OlderThan != "" {
		d, err := run.ParseAge(c.OlderThan)
		if err != nil {
			return r, withCode(exitUsage, fmt.Errorf("--older-than %q: %v", c.OlderThan, err))
		}
		r.OlderThan, r.ByAge = d, true
	}
	for _, s := range run.PruneDefault() {
		r.Statuses[s] = true
	}
	if len(c.Status) > 0 {
		var err error
		if r.Statuses, err = run.ParseStatuses(c.Status, run.RunStatuses()); err != nil {
			return r, err
		}
		if r.Statuses[exec.RunInProgress] {
			return r, withCode(exitUsage, errors.New("--status in_progress: prune never removes a run in progress (interrupted selects runs whose faber died)"))
		}
	}
	return r, nil
}

// Run chooses the runs to prune and removes each with its child runs;
// then it tidies the registry of state dirs (tidyRegistry). --forget alone
// only does the latter.
func (c *PruneCmd) Run(g *Globals) (err error) {
	if c.JSON {
		c.res = &pruneResult{DryRun: c.DryRun, Removed: []prunedRun{}, Kept: []keptRun{}, Forgotten: []string{}}
		defer func() {
			// What was done is printed, also when a run could not be
			// removed; a usage error did nothing.
			if exitCode(err) != exitUsage {
				printJSON(g.stdout, c.res)
			}
		}()
	}
	if c.Dir != "" && !c.Forget {
		return withCode(exitUsage, fmt.Errorf("unexpected argument %s: a state dir is given to --forget (faber prune --forget %s)", c.Dir, c.Dir))
	}
	if c.Forget && c.Keep == nil && c.OlderThan == "" {
		return c.tidyRegistry(g)
	}
	rule, err := c.rule()
	if err != nil {
		return err
	}
	err = c.prune(g, rule)
	if terr := c.tidyRegistry(g); err == nil {
		err = terr
	}
	return err
}

// tidyRegistry drops from the registry of state dirs the one --forget
// names and every one that no longer holds runs (a dir removed, or without
// runs/): 'faber list --all' only skips those. With --dry-run it says what
// --forget would do and changes nothing.
func (c *PruneCmd) tidyRegistry(g *Globals) error {
	dir := ""
	if c.Forget {
		dir = g.StateDir
		if c.Dir != "" {
			abs, err := filepath.Abs(c.Dir)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("--forget %s: %v", c.Dir, err))
			}
			dir = abs
		}
		if registryPath() == "" {
			return fmt.Errorf("--forget %s: the registry of state dirs is off (%s=off, or no home directory): there is nothing to forget", dir, registry.Env)
		}
	}
	if c.DryRun {
		if dir != "" && c.res != nil {
			c.res.Forgotten = append(c.res.Forgotten, dir)
		} else if dir != "" {
			fmt.Fprintf(g.stdout, "would forget the state dir %s (dry run: the registry is unchanged)\n", dir)
		}
		return nil
	}
	dropped, err := forgetStateDirs(map[string]bool{dir: dir != ""})
	if err != nil {
		if c.Forget {
			return withCode(exitState, fmt.Errorf("--forget %s: %v", dir, err))
		}
		if g.Verbose {
			fmt.Fprintf(g.stderr, "faber: warning: cannot tidy the registry of state dirs: %v\n", err)
		}
		return nil
	}
	forgot := false
	for _, d := range dropped {
		if c.res != nil {
			c.res.Forgotten = append(c.res.Forgotten, d)
			forgot = forgot || d == dir
			continue
		}
		if d == dir {
			forgot = true
			fmt.Fprintf(g.stdout, "forgot the state dir %s: faber list --all and faber ui no longer show its runs (they stay in it)\n", d)
		} else {
			fmt.Fprintf(g.stdout, "forgot the state dir %s: it holds no runs any more\n", d)
		}
	}
	if dir != "" && !forgot && c.res == nil {
		fmt.Fprintf(g.stdout, "the state dir %s is not in the registry: nothing to forget\n", dir)
	}
	return nil
}

// prune removes the runs rule chooses.
func (c *PruneCmd) prune(g *Globals, rule run.PruneRule) error {
	now := time.Now()
	items, err := run.PrunePlan(g.StateDir, rule, now)
	if err != nil {
		return err
	}
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
	for _, it := range items {
		r := it.Runs[0]
		if it.Kept != "" {
			c.kept(g, r.RunID, it.Kept)
			continue
		}
		if c.DryRun {
			for _, m := range it.Runs {
				freed += state.DiskUsage(state.RunDir(g.StateDir, m.RunID))
				c.printPruned(g, "would remove", m, now)
			}
			count += len(it.Runs)
			continue
		}
		n, err := run.Prune(g.StateDir, it)
		freed += n
		switch {
		case err == nil:
			for _, m := range it.Runs {
				c.printPruned(g, "removed", m, now)
			}
			count += len(it.Runs)
		case errors.Is(err, state.ErrLocked):
			c.kept(g, r.RunID, fmt.Sprintf("it became active (%v)", err))
		case errors.Is(err, run.ErrPruneChanged):
			c.kept(g, r.RunID, fmt.Sprintf("%v; run prune again to reconsider it", err))
		default:
			fmt.Fprintf(g.stderr, "faber: cannot remove run %s: %v\n", r.RunID, err)
			failed = append(failed, r.RunID)
		}
	}
	switch {
	case c.res != nil:
		c.res.FreedBytes = freed
	case c.DryRun:
		fmt.Fprintf(g.stdout, "would remove %d %s, freeing %s (dry run: nothing was removed)\n", count, plural(count, "run", "runs"), humanBytes(freed))
	default:
		fmt.Fprintf(g.stdout, "removed %d %s, freed %s\n", count, plural(count, "run", "runs"), humanBytes(freed))
	}
	if len(failed) > 0 {
		return withCode(exitState, fmt.Errorf("prune could not remove %s (see above)", strings.Join(failed, ", ")))
	}
	return nil
}

func (c *PruneCmd) printPruned(g *Globals, verb string, r *run.PruneRun, now time.Time) {
	if c.res != nil {
		c.res.Removed = append(c.res.Removed, prunedRun{RunID: r.RunID, Plan: r.Plan, Status: r.Status, StartedAt: r.StartedAt, ParentRunID: r.ParentRunID})
		return
	}
	child := ""
	if r.ParentRunID != "" {
		child = "; child run of " + r.ParentRunID
	}
	fmt.Fprintf(g.stdout, "%s %s (%s, started %s ago%s)\n", verb, r.RunID, r.Status, humanAge(now.Sub(r.StartedAt)), child)
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
