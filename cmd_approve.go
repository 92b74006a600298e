package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
)

// ApproveCmd approves a step (or a phase) that waits at its approval gate.
type ApproveCmd struct {
	RunRef `embed:""`
	Step   string `arg:"" optional:"" name:"step" help:"The step awaiting approval, a fan-out whose items wait at its gate, or a gated phase's name."`
	Phase  bool   `name:"phase" help:"STEP names a phase (when a step has the same name)."`
	Note   string `name:"note" placeholder:"TEXT" help:"Recorded in the step_approved event."`
	JSON   bool   `name:"json" help:"Print {run_id, step, phase, decision, applied_now} instead of a sentence (applied_now: the running faber applies it now, else resume does)."`
}

// Help explains approve.
func (c *ApproveCmd) Help() string {
	return `Approves a step that waits as awaiting_approval (a step_approved event with
your note): on a run that is still active, the running faber starts it at
once; otherwise the approval is recorded and 'faber resume <run-id>' runs the
step without asking again. Naming a phase with approval: decides the gate of
its entry steps, once.

Examples:
  faber approve --last deploy --note "release notes checked"
  faber approve build-20260501T100000-1a2b release --phase
  faber pending --last                     the gates that wait, with their prompt`
}

// Run approves the gate.
func (c *ApproveCmd) Run(g *Globals) error {
	return decideGate(g, &c.RunRef, c.Step, c.Phase, true, c.Note, c.JSON)
}

// RejectCmd rejects a step (or a phase) that waits at its approval gate.
type RejectCmd struct {
	RunRef `embed:""`
	Step   string `arg:"" optional:"" name:"step" help:"The step awaiting approval, a fan-out whose items wait at its gate, or a gated phase's name."`
	Phase  bool   `name:"phase" help:"STEP names a phase (when a step has the same name)."`
	Reason string `name:"reason" required:"" placeholder:"TEXT" help:"Why: the step's error is rejected: TEXT."`
	JSON   bool   `name:"json" help:"Print {run_id, step, phase, decision, applied_now} instead of a sentence."`
}

// Help explains reject.
func (c *RejectCmd) Help() string {
	return `Rejects a step that waits as awaiting_approval (a step_rejected event with
your reason): the step fails with the error "rejected: REASON" and goes
through its on_failure like any failure (a retry, or a handler that re-runs
it, asks for approval again). On a run that is still active the running
faber applies it at once; otherwise 'faber resume <run-id>' does.

Examples:
  faber reject --last deploy --reason "the changelog is missing"
  faber reject --last review --reason "tests do not cover the bug" --json`
}

// Run rejects the gate.
func (c *RejectCmd) Run(g *Globals) error {
	if strings.TrimSpace(c.Reason) == "" {
		return withCode(exitUsage, errors.New("--reason must say why the step is rejected"))
	}
	return decideGate(g, &c.RunRef, c.Step, c.Phase, false, c.Reason, c.JSON)
}

func decideGate(g *Globals, ref *RunRef, step string, phase, approve bool, text string, asJSON bool) error {
	if err := lastWithStep(ref.Last, &ref.RunID, &step); err != nil {
		return err
	}
	if err := ref.resolve(g); err != nil {
		return err
	}
	live, err := run.Decide(g.StateDir, ref.RunID, exec.GateReq{Step: step, Phase: phase, Approve: approve, Text: text, By: "cli"}, storeOptions(g))
	if err != nil {
		return err
	}
	what := "approved"
	if !approve {
		what = "rejected"
	}
	if asJSON {
		return printJSON(g.stdout, struct {
			RunID      string `json:"run_id"`
			Step       string `json:"step"`
			Phase      bool   `json:"phase"`
			Decision   string `json:"decision"`
			AppliedNow bool   `json:"applied_now"`
		}{ref.RunID, step, phase, what, live})
	}
	if live {
		fmt.Fprintf(g.stdout, "%s %s in run %s; the running faber applies it now\n", step, what, ref.RunID)
		return nil
	}
	fmt.Fprintf(g.stdout, "%s %s in run %s; continue with: faber resume %s\n", step, what, ref.RunID, ref.RunID)
	return nil
}
