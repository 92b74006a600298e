package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// ResumeCmd continues a run.
type ResumeCmd struct {
	RunID         string `arg:"" optional:"" name:"run-id" predictor:"run" help:"The run to continue: its id, a unique prefix of it, or --last (see faber list)."`
	Last          bool   `name:"last" help:"Continue the newest run in the state dir."`
	Plan          string `name:"plan" placeholder:"PLAN" predictor:"plan" help:"Resume with an edited plan: changed steps re-run with everything downstream."`
	RetryPending  bool   `name:"retry-pending" help:"Also retry steps that wait as pending_failed."`
	Jobs          int    `name:"jobs" short:"j" placeholder:"N" help:"Run at most N steps at once."`
	FailFast      bool   `name:"fail-fast" help:"On a stop, terminate running steps instead of letting them finish."`
	UI            string `name:"ui" enum:"auto,tui,plain,json" default:"auto" help:"Progress display: auto, tui, plain or json."`
	JSON          bool   `name:"json" help:"The same as --ui json: one event per line."`
	capacityFlags `embed:""`
	// ownerArgs is the background owner's command line (runDetachedArgs)
	// when this resume is not the command line's own (attach's); nil: the
	// command line.
	ownerArgs []string
}

// Help explains resume in more depth.
func (c *ResumeCmd) Help() string {
	return `Steps that succeeded are kept and never re-run. Failed, remediation_failed,
canceled and interrupted steps run again, with the next attempt number (the
logs of earlier attempts are kept) and fresh retry budgets; skipped steps
have their when: evaluated again. pending_failed
steps wait for 'faber classify' unless --retry-pending is given.

If the faber that owned the run died (kill -9, a crash), resume first
terminates any process the run left behind, records the steps that were
running as interrupted (step_orphaned), then runs them again.

Examples:
  faber resume dataset-create-20261122T101500-3f2a
  faber resume --last
  faber resume <run-id> --plan plan.yaml     after editing the plan
  faber resume <run-id> --memory 48G         a larger capacity this time

The capacity (--cpus, --memory, --gpus) is not remembered: a resume
resolves it again from its flags, the plan's resources: and this machine.`
}

// Run resumes the run.
func (c *ResumeCmd) Run(g *Globals) error {
	if err := jsonUI(c.JSON, &c.UI); err != nil {
		return err
	}
	if err := checkUI(g, c.UI); err != nil {
		return err
	}
	if err := resolveRun(g, &c.RunID, c.Last); err != nil {
		return err
	}
	flags, err := c.capacityFlags.capacity()
	if err != nil {
		return err
	}
	if detachable(g, c.UI) {
		// The live view: the run goes on in a background owner, so that
		// q gives the prompt back (detach.go).
		args := c.ownerArgs
		if args == nil {
			args = os.Args[1:]
		}
		if started, err := runDetachedArgs(g, args); started {
			return err
		}
	}
	return resumeSession(g, c.RunID, run.ResumeOptions{PlanFile: c.Plan, RetryPending: c.RetryPending, Capacity: flags},
		sessionArgs{jobs: c.Jobs, failFast: c.FailFast, ui: c.UI})
}

// resumeSession continues a run in a new session (run.ResumeSession): for
// resume, for a parent's sub-plan step whose child run exists, and for
// recover after its agent. It says what the takeover found, then runs the
// session as runSession does.
func resumeSession(g *Globals, runID string, o run.ResumeOptions, a sessionArgs) error {
	plan := filepath.Join(state.RunDir(g.StateDir, runID), "plan.snapshot")
	if o.PlanFile != "" {
		plan = o.PlanFile
	}
	if fi, err := os.Stat(plan); err == nil {
		tuneGC(fi.Size())
	}
	if err := checkOpenFiles(); err != nil {
		return err
	}
	s, res, err := run.ResumeSession(g.StateDir, runID, storeOptions(g), o)
	if err != nil {
		var inv *spec.Invalid
		if errors.As(err, &inv) {
			return withCode(exitUsage, planError(inv))
		}
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(g.stderr, "faber: warning: %s\n", w.Error())
	}
	for _, c := range res.Canceled {
		fmt.Fprintf(g.stderr, "faber: canceled %d leftover %s job(s) of run %s\n", c.Jobs, c.Engine, runID)
	}
	return runSession(g, s, a)
}

// ResetCmd resets steps of a run.
type ResetCmd struct {
	RunRef     `embed:""`
	FailedOnly bool     `name:"failed-only" help:"Only failed, canceled and pending_failed steps (and their downstream)."`
	Step       []string `name:"step" placeholder:"ID" predictor:"runstep" help:"Reset this step and everything downstream (repeatable)."`
	JSON       bool     `name:"json" help:"Print {run_id, reset: [step ids]} instead of a sentence."`
}

// Help explains reset.
func (c *ResetCmd) Help() string {
	return `Puts steps back to pending so that 'faber resume' runs them again; attempt
numbers continue and logs are kept. Refused while the run is active.

  faber reset <run-id> --failed-only   failed, canceled, pending_failed steps and their downstream
  faber reset <run-id> --step build    build and everything after it
  faber reset <run-id>                 every step

Examples:
  faber reset --last --failed-only && faber resume --last
  faber reset build-20260501T100000-1a2b --step test --step lint`
}

// Run resets the steps and records why.
func (c *ResetCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	changed, err := run.Reset(g.StateDir, c.RunID, c.FailedOnly, c.Step, storeOptions(g))
	if err != nil {
		return err
	}
	if c.JSON {
		ids := make([]string, 0, len(changed))
		for _, st := range changed {
			ids = append(ids, st.ID)
		}
		return printJSON(g.stdout, struct {
			RunID string   `json:"run_id"`
			Reset []string `json:"reset"`
		}{c.RunID, ids})
	}
	if len(changed) == 0 {
		fmt.Fprintf(g.stdout, "nothing to reset in run %s\n", c.RunID)
		return nil
	}
	fmt.Fprintf(g.stdout, "reset %d %s of run %s to pending; continue with: faber resume %s\n", len(changed), plural(len(changed), "step", "steps"), c.RunID, c.RunID)
	return nil
}
