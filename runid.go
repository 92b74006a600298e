package main

import (
	"fmt"
	"strings"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// resolveRun turns what the user typed for a run — a run id, a unique prefix
// of one, or --last — into the run's full id, in place. Every command that
// takes a run id goes through here, so all of them accept the same forms.
func resolveRun(g *Globals, id *string, last bool) error {
	ref := *id
	switch {
	case ref != "" && last:
		return withCode(exitUsage, fmt.Errorf("give a run id or --last, not both"))
	case ref == "" && !last:
		return withCode(exitUsage, fmt.Errorf("which run? give its id or a unique prefix (see faber list), or --last"))
	case last:
		newest, err := newestRun(g)
		if err != nil {
			return err
		}
		*id = newest
		return nil
	}
	ids, err := state.MatchRunIDs(g.StateDir, ref)
	if err != nil {
		return withCode(exitState, err)
	}
	switch len(ids) {
	case 0:
		return withCode(exitState, fmt.Errorf("run %q not found in %s (faber list shows the runs there; runs elsewhere: --state-dir DIR or FABER_STATE_DIR)", ref, g.StateDir))
	case 1:
		*id = ids[0]
		return nil
	}
	const show = 10
	more := ""
	if len(ids) > show {
		more = fmt.Sprintf(" and %d more", len(ids)-show)
		ids = ids[:show]
	}
	return withCode(exitUsage, fmt.Errorf("run id prefix %q is ambiguous: it matches %s%s; type more of the id", ref, strings.Join(ids, ", "), more))
}

// newestRun is --last: the newest top-level run (a sub-plan step's child run
// is reached through its parent).
func newestRun(g *Globals) (string, error) {
	metas, err := state.List(g.StateDir)
	if err != nil {
		return "", withCode(exitState, err)
	}
	for _, m := range metas {
		if m.ParentRunID == "" {
			return m.RunID, nil
		}
	}
	return "", withCode(exitState, fmt.Errorf("no runs in %s (runs elsewhere: --state-dir DIR or FABER_STATE_DIR)", g.StateDir))
}

// lastWithStep lets `faber logs --last STEP` and `faber classify --last STEP`
// work: with --last, the one positional given is the step, not the run.
func lastWithStep(last bool, runID, step *string) error {
	if last && *step == "" {
		*step, *runID = *runID, ""
	}
	if *step == "" && (last || *runID != "") {
		return withCode(exitUsage, fmt.Errorf("which step? give the step id after the run"))
	}
	return nil
}

// RunRef is the run argument of every command that works on one run: an
// id, a unique prefix of one, or --last.
type RunRef struct {
	RunID string `arg:"" optional:"" name:"run-id" predictor:"run" help:"The run: its id, a unique prefix of it, or --last (see faber list)."`
	Last  bool   `name:"last" help:"The newest run in the state dir."`
}

// resolve makes r.RunID the run's full id (resolveRun).
func (r *RunRef) resolve(g *Globals) error { return resolveRun(g, &r.RunID, r.Last) }

// view resolves the run and rebuilds it from its event log; a damaged
// store is a warning, as the log still shows the run.
func (r *RunRef) view(g *Globals) (*exec.View, error) {
	if err := r.resolve(g); err != nil {
		return nil, err
	}
	v, _, de, err := run.Load(g.StateDir, r.RunID)
	if err != nil {
		return nil, err
	}
	warnDamaged(g, de)
	return v, nil
}
