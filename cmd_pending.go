package main

import (
	"fmt"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// PendingCmd lists pending_failed steps.
type PendingCmd struct {
	RunRef `embed:""`
	JSON   bool `name:"json" help:"Print a JSON array of {step_id, name, phase, attempt, exit_code, error, hint, stderr_tail}."`
}

// Help explains pending.
func (c *PendingCmd) Help() string {
	return `Lists the steps of a run that wait as pending_failed for a decision (plans with
use_pending_failed: true): exit code, attempt, error, cause and peak memory,
a hint, and the last 50 lines of stderr, with the classify command to run.
A step that a spent budget failed (cause budget) shows each budget that
covers it, spent against its limits: only a person spends more (classify
--retry starts it once whatever its budget).

Examples:
  faber pending --last
  faber pending build-20260501T100000-1a2b --json | jq -r '.[].step_id'`
}

// Run prints the pending steps.
func (c *PendingCmd) Run(g *Globals) error {
	v, err := c.view(g)
	if err != nil {
		return err
	}
	ps := run.PendingOf(g.StateDir, c.RunID, v)
	gates := run.GatesOf(v)
	if c.JSON {
		// Steps awaiting approval follow, with kind approval.
		all := make([]any, 0, len(ps)+len(gates))
		for _, p := range ps {
			all = append(all, p)
		}
		for _, p := range gates {
			all = append(all, p)
		}
		return printJSON(g.stdout, all)
	}
	if len(ps) == 0 && len(gates) == 0 {
		fmt.Fprintf(g.stdout, "run %s has no pending_failed steps\n", c.RunID)
		return nil
	}
	defer c.printGates(g, gates)
	for _, p := range ps {
		code := "-"
		if p.ExitCode != nil {
			code = fmt.Sprint(*p.ExitCode)
		}
		fmt.Fprintf(g.stdout, "step %s (phase %s): attempt %d, exit %s: %s\n", p.StepID, p.Phase, p.Attempt, code, p.Error)
		budget := p.Cause == spec.CauseBudget
		if p.PeakRSSBytes > 0 || p.Cause != "" && !budget {
			peak := spec.FormatSize(p.PeakRSSBytes)
			if p.PeakUpperBound {
				peak = "≤" + peak
			}
			fmt.Fprintf(g.stdout, "  memory: peak %s", peak)
			if p.MemoryLimitBytes > 0 {
				fmt.Fprintf(g.stdout, " of a %s limit", spec.FormatSize(p.MemoryLimitBytes))
			}
			if p.Cause != "" && !budget {
				fmt.Fprintf(g.stdout, "; cause: %s", p.Cause)
			}
			fmt.Fprintln(g.stdout)
		}
		if budget {
			// A spent budget is no memory matter: its own lines, with
			// what each budget that covers the step has spent.
			fmt.Fprintf(g.stdout, "  cause: budget\n")
			for _, l := range p.Budgets {
				fmt.Fprintf(g.stdout, "  budget %s\n", run.BudgetText(l))
			}
		}
		if p.Hint != "" {
			fmt.Fprintf(g.stdout, "  hint: %s\n", p.Hint)
		}
		for _, l := range p.StderrTail {
			fmt.Fprintf(g.stdout, "  | %s\n", l)
		}
		fmt.Fprintf(g.stdout, "  decide: faber classify %s %s --retry|--fail --reason '...'\n", c.RunID, p.StepID)
	}
	return nil
}

// printGates lists the steps awaiting approval, and how to decide.
func (c *PendingCmd) printGates(g *Globals, gates []run.GateStep) {
	for _, p := range gates {
		prompt := p.Prompt
		if prompt == "" {
			prompt = "(no prompt)"
		}
		name := p.StepID
		if p.Gate != "" {
			name = p.Gate
			fmt.Fprintf(g.stdout, "step %s (phase %s): awaiting approval of phase %s: %s\n", p.StepID, p.Phase, p.Gate, prompt)
		} else {
			fmt.Fprintf(g.stdout, "step %s (phase %s): awaiting approval: %s\n", p.StepID, p.Phase, prompt)
		}
		if p.Deadline != nil {
			fmt.Fprintf(g.stdout, "  deadline: %s\n", p.Deadline.Local().Format(time.RFC3339))
		}
		if p.Decided != "" {
			fmt.Fprintf(g.stdout, "  %s; the next resume applies it: faber resume %s\n", p.Decided, c.RunID)
			continue
		}
		name = tui.ShellQuote(name)
		fmt.Fprintf(g.stdout, "  decide: faber approve %s %s [--note '...'] | faber reject %s %s --reason '...'\n", c.RunID, name, c.RunID, name)
	}
}

// ClassifyCmd classifies a pending_failed step.
type ClassifyCmd struct {
	RunRef  `embed:""`
	Step    string        `arg:"" optional:"" name:"step" predictor:"runstep" help:"The pending_failed step."`
	Retry   bool          `name:"retry" xor:"action" help:"Run the step again on resume (next attempt number). One of --retry or --fail is needed."`
	Fail    bool          `name:"fail" xor:"action" help:"Fail the step for good; its dependents are canceled. One of --retry or --fail is needed."`
	Reason  string        `name:"reason" placeholder:"TEXT" help:"Why: recorded in the step_classified event."`
	Memory  string        `name:"memory" placeholder:"SIZE" help:"With --retry: the next attempt's memory limit (512MiB, 8GiB)."`
	Timeout time.Duration `name:"timeout" placeholder:"DURATION" help:"With --retry: the next attempt's timeout (2h)."`
	JSON    bool          `name:"json" help:"Print {run_id, step_id, action, applied_by_pid} instead of a sentence (applied_by_pid: the running faber that applies it now, else null)."`
}

// Help explains classify.
func (c *ClassifyCmd) Help() string {
	return `Records a decision on a step that waits as pending_failed (a step_classified
event with your reason). --retry makes it pending again; --fail makes it a
failure for good and cancels what depends on it. Then 'faber resume <run-id>'
continues. On a run that is still active, the running faber applies it.
Give one of --retry or --fail, not both.

Examples:
  faber classify --last load --retry --reason "the mirror was down"
  faber classify build-20260501T100000-1a2b load --retry --memory 8GiB
  faber classify --last load --fail --reason "bad input: fix the data first"`
}

// Run classifies the step, through the live owner if there is one.
func (c *ClassifyCmd) Run(g *Globals) error {
	if !c.Retry && !c.Fail {
		return withCode(exitUsage, fmt.Errorf("classify needs a decision: --retry (run the step again) or --fail (fail it for good)"))
	}
	if err := lastWithStep(c.Last, &c.RunID, &c.Step); err != nil {
		return err
	}
	if err := c.resolve(g); err != nil {
		return err
	}
	action := exec.ClassifiedRetry
	if c.Fail {
		action = exec.ClassifiedFail
	}
	lim, err := run.ClassifyLimits(c.Memory, c.Timeout, c.Retry)
	if err != nil {
		return err
	}
	if err := run.ClassifyWith(g.StateDir, c.RunID, c.Step, action, c.Reason, lim, storeOptions(g)); err != nil {
		return err
	}
	o, err := state.OwnerOf(g.StateDir, c.RunID)
	live := err == nil && o.Alive
	if c.JSON {
		out := struct {
			RunID  string `json:"run_id"`
			StepID string `json:"step_id"`
			Action string `json:"action"`
			PID    *int   `json:"applied_by_pid"`
		}{RunID: c.RunID, StepID: c.Step, Action: action}
		if live {
			out.PID = &o.PID
		}
		return printJSON(g.stdout, out)
	}
	if live {
		fmt.Fprintf(g.stdout, "step %s of run %s classified %s; the running faber (pid %d) applies it now\n", c.Step, c.RunID, action, o.PID)
		return nil
	}
	fmt.Fprintf(g.stdout, "step %s of run %s classified %s; continue with: faber resume %s\n", c.Step, c.RunID, action, c.RunID)
	return nil
}
