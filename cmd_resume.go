package main

import (
	"fmt"
	"os"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
)

// ResumeCmd continues a run.
type ResumeCmd struct {
	RunID        string `arg:"" optional:"" name:"run-id" help:"The run to continue: its id, a unique prefix of it, or --last (see faber list)."`
	Last         bool   `name:"last" help:"Continue the newest run in the state dir."`
	Plan         string `name:"plan" placeholder:"PLAN" help:"Resume with an edited plan: changed steps re-run with everything downstream."`
	RetryPending bool   `name:"retry-pending" help:"Also retry steps that wait as pending_failed."`
	Jobs         int    `name:"jobs" short:"j" placeholder:"N" help:"Run at most N steps at once."`
	FailFast     bool   `name:"fail-fast" help:"On a stop, terminate running steps instead of letting them finish."`
	UI           string `name:"ui" enum:"auto,tui,plain,json" default:"auto" help:"Progress display: auto, tui, plain or json."`

	parentRun string // set when a parent's sub-plan step resumes its child run
	outputDir string
}

// Help explains resume in more depth.
func (c *ResumeCmd) Help() string {
	return `Steps that succeeded are kept and never re-run. Failed, remediation_failed,
canceled and interrupted steps run again, with the next attempt number (the
logs of earlier attempts are kept) and fresh retry budgets. pending_failed
steps wait for 'faber classify' unless --retry-pending is given.

If the faber that owned the run died (kill -9, a crash), resume first
terminates any process the run left behind, records the steps that were
running as interrupted (step_orphaned), then runs them again.

Examples:
  faber resume dataset-create-20261122T101500-3f2a
  faber resume --last
  faber resume <run-id> --plan plan.yaml     after editing the plan`
}

// Run resumes the run.
func (c *ResumeCmd) Run(g *Globals) error {
	if err := resolveRun(g, &c.RunID, c.Last); err != nil {
		return err
	}
	runID := c.RunID
	store, err := run.Open(g.StateDir, runID, storeOptions(g))
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			store.Close()
		}
	}()
	snap, prior, err := run.LoadRecords(store, runID, g.StateDir)
	if err != nil {
		return err
	}
	if prior.Run.Status == exec.RunSuccess && allSuccess(prior) {
		return withCode(exitState, fmt.Errorf("run %s already succeeded; nothing to resume (faber reset %s --step ID re-runs steps)", runID, runID))
	}
	opts := spec.Options{Sets: snap.Meta.Sets}
	for k := range snap.Meta.Sets {
		opts.SetKeys = append(opts.SetKeys, k)
	}
	var plan *spec.Plan
	var planBytes []byte
	edited := false
	if c.Plan != "" {
		planBytes, err = os.ReadFile(c.Plan)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("cannot read plan: %w", unwrapPath(err)))
		}
		plan, err = parsePlan(g, c.Plan, planBytes, opts)
		edited = true
	} else {
		plan, err = parsePlan(g, snap.Meta.PlanFile, snap.Plan, opts)
	}
	if err != nil {
		return err
	}

	// A dead owner may have left processes behind: terminate them before any
	// step runs again, so that no step ever runs twice at the same time.
	for _, st := range prior.Steps {
		switch st.Status {
		case exec.StatusInProgress, exec.StatusRemediating, exec.StatusRetrying:
			exec.KillLeftoverGroup(st.PGID, st.PStart)
		}
	}
	exec.KillRunProcesses(runID)
	if exec.PlanUsesSlurm(plan) {
		if n := exec.CancelLeftoverSlurmJobs(runID); n > 0 {
			fmt.Fprintf(g.stderr, "faber: canceled %d leftover Slurm job(s) of run %s\n", n, runID)
		}
	}

	if err := exec.PrepareResume(plan, prior, exec.ResumeOptions{RetryPending: c.RetryPending, EditedPlan: edited}); err != nil {
		return withCode(exitUsage, err)
	}
	if edited {
		if err := store.SetPlan(planBytes); err != nil {
			return withCode(exitState, err)
		}
	}
	ok = true
	return runSession(g, sessionArgs{plan: plan, store: store, runID: runID, prior: prior, jobs: c.Jobs, failFast: c.FailFast, ui: c.UI,
		parentRun: c.parentRun, outputDir: c.outputDir})
}

func allSuccess(p *exec.Prior) bool {
	for _, st := range p.Steps {
		if st.Status != exec.StatusSuccess {
			return false
		}
	}
	return true
}

// ResetCmd resets steps of a run.
type ResetCmd struct {
	RunID      string   `arg:"" optional:"" name:"run-id" help:"The run: its id, a unique prefix of it, or --last (see faber list)."`
	Last       bool     `name:"last" help:"The newest run in the state dir."`
	FailedOnly bool     `name:"failed-only" help:"Only failed, canceled and pending_failed steps (and their downstream)."`
	Step       []string `name:"step" placeholder:"ID" help:"Reset this step and everything downstream (repeatable)."`
}

// Help explains reset.
func (c *ResetCmd) Help() string {
	return `Puts steps back to pending so that 'faber resume' runs them again; attempt
numbers continue and logs are kept. Refused while the run is active.

  faber reset <run-id> --failed-only   failed, canceled, pending_failed steps and their downstream
  faber reset <run-id> --step build    build and everything after it
  faber reset <run-id>                 every step`
}

// Run resets the steps and records why.
func (c *ResetCmd) Run(g *Globals) error {
	if err := resolveRun(g, &c.RunID, c.Last); err != nil {
		return err
	}
	changed, err := run.Reset(g.StateDir, c.RunID, c.FailedOnly, c.Step, storeOptions(g))
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		fmt.Fprintf(g.stdout, "nothing to reset in run %s\n", c.RunID)
		return nil
	}
	fmt.Fprintf(g.stdout, "reset %d %s of run %s to pending; continue with: faber resume %s\n", len(changed), plural(len(changed), "step", "steps"), c.RunID, c.RunID)
	return nil
}
