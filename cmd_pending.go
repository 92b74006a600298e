package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/state"
)

// PendingCmd lists pending_failed steps.
type PendingCmd struct {
	RunID string `arg:"" optional:"" name:"run-id" help:"The run: its id, a unique prefix of it, or --last (see faber list)."`
	Last  bool   `name:"last" help:"The newest run in the state dir."`
	JSON  bool   `name:"json" help:"Print a JSON array of {step_id, name, phase, attempt, exit_code, error, hint, stderr_tail}."`
}

// PendingStep is one step awaiting classification, as `pending --json`
// prints it and the MCP tool returns it.
type PendingStep struct {
	StepID     string   `json:"step_id"`
	Name       string   `json:"name"`
	Phase      string   `json:"phase"`
	Attempt    int      `json:"attempt"`
	ExitCode   *int     `json:"exit_code"`
	Error      string   `json:"error"`
	Hint       string   `json:"hint"`
	StderrFile string   `json:"stderr_file"`
	StderrTail []string `json:"stderr_tail"`
}

// pendingSteps lists a run's pending_failed steps with their stderr tails.
func pendingSteps(g *Globals, runID string) ([]PendingStep, error) {
	v, _, err := loadView(g, runID)
	if err != nil {
		return nil, err
	}
	return pendingOf(g, runID, v), nil
}

// pendingOf lists the pending_failed steps of a run's view.
func pendingOf(g *Globals, runID string, v *exec.View) []PendingStep {
	out := []PendingStep{}
	runDir := state.RunDir(g.StateDir, runID)
	for _, st := range v.Steps {
		if st.Status != exec.StatusPendingFailed {
			continue
		}
		path := exec.LogPath(runDir, st.ID, "attempt", st.Attempt, "err")
		tail := tailLines(path, 50)
		out = append(out, PendingStep{
			StepID: st.ID, Name: st.Name, Phase: st.Phase, Attempt: st.Attempt, ExitCode: st.ExitCode,
			Error: st.Error, Hint: exec.Hint(st.Error + "\n" + strings.Join(tail, "\n")), StderrFile: path, StderrTail: tail,
		})
	}
	return out
}

// tailLines returns the last n lines of a file (at most its last 256 KiB).
func tailLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{}
	}
	defer f.Close()
	const max = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		f.Seek(fi.Size()-max, 0)
	}
	var buf bytes.Buffer
	buf.ReadFrom(f)
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return []string{}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// Run prints the pending steps.
func (c *PendingCmd) Run(g *Globals) error {
	if err := resolveRun(g, &c.RunID, c.Last); err != nil {
		return err
	}
	v, _, de, err := loadViewLog(g, c.RunID)
	if err != nil {
		return err
	}
	warnDamaged(g, de)
	ps := pendingOf(g, c.RunID, v)
	if c.JSON {
		return printJSON(g.stdout, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintf(g.stdout, "run %s has no pending_failed steps\n", c.RunID)
		return nil
	}
	for _, p := range ps {
		code := "-"
		if p.ExitCode != nil {
			code = fmt.Sprint(*p.ExitCode)
		}
		fmt.Fprintf(g.stdout, "step %s (phase %s): attempt %d, exit %s: %s\n", p.StepID, p.Phase, p.Attempt, code, p.Error)
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

// ClassifyCmd classifies a pending_failed step.
type ClassifyCmd struct {
	RunID  string `arg:"" optional:"" name:"run-id" help:"The run: its id, a unique prefix of it, or --last (see faber list)."`
	Last   bool   `name:"last" help:"The newest run in the state dir."`
	Step   string `arg:"" optional:"" name:"step" help:"The pending_failed step."`
	Retry  bool   `name:"retry" xor:"action" required:"" help:"Run the step again on resume (next attempt number)."`
	Fail   bool   `name:"fail" xor:"action" required:"" help:"Fail the step for good; its dependents are canceled."`
	Reason string `name:"reason" placeholder:"TEXT" help:"Why: recorded in the step_classified event."`
}

// Help explains classify.
func (c *ClassifyCmd) Help() string {
	return `Records a decision on a step that waits as pending_failed (a step_classified
event with your reason). --retry makes it pending again; --fail makes it a
failure for good and cancels what depends on it. Then 'faber resume <run-id>'
continues. On a run that is still active, the running faber applies it.`
}

// Run classifies the step, through the live owner if there is one.
func (c *ClassifyCmd) Run(g *Globals) error {
	if err := lastWithStep(c.Last, &c.RunID, &c.Step); err != nil {
		return err
	}
	if err := resolveRun(g, &c.RunID, c.Last); err != nil {
		return err
	}
	action := exec.ClassifiedRetry
	if c.Fail {
		action = exec.ClassifiedFail
	}
	if err := classifyStep(g, c.RunID, c.Step, action, c.Reason); err != nil {
		return err
	}
	if o, err := state.OwnerOf(g.StateDir, c.RunID); err == nil && o.Alive {
		fmt.Fprintf(g.stdout, "step %s of run %s classified %s; the running faber (pid %d) applies it now\n", c.Step, c.RunID, action, o.PID)
		return nil
	}
	fmt.Fprintf(g.stdout, "step %s of run %s classified %s; continue with: faber resume %s\n", c.Step, c.RunID, action, c.RunID)
	return nil
}

// classifyStep applies a classification: through the running owner, else by
// opening the run's store.
func classifyStep(g *Globals, runID, step, action, reason string) error {
	if _, err := state.ReadMeta(g.StateDir, runID); err != nil {
		return stateErr(err, runID, g.StateDir)
	}
	// A sub-plan step waits on its child run: name the child's steps to decide on.
	if v, _, err := loadView(g, runID); err == nil {
		for _, st := range v.Steps {
			if st.ID != step || st.ChildRunID == "" || st.Status != exec.StatusPendingFailed {
				continue
			}
			var ids []string
			if cv, _, err := loadView(g, st.ChildRunID); err == nil {
				for _, c := range cv.Steps {
					if c.Status == exec.StatusPendingFailed {
						ids = append(ids, c.ID)
					}
				}
			}
			return withCode(exitUsage, fmt.Errorf("step %q waits on its child run %s, whose pending steps are: %s; classify those (faber classify %s STEP ...), then resume %s",
				step, st.ChildRunID, strings.Join(ids, ", "), st.ChildRunID, runID))
		}
	}
	runDir := state.RunDir(g.StateDir, runID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep, ok, err := control.Send(runDir, control.Msg{Op: "classify", Step: step, Action: action, Reason: reason})
		if err != nil {
			return withCode(exitState, err)
		}
		if ok {
			if !rep.OK {
				if rep.Usage {
					return withCode(exitUsage, errors.New(rep.Error))
				}
				return withCode(exitState, errors.New(rep.Error))
			}
			return nil
		}
		store, err := state.Open(g.StateDir, runID, storeOptions(g))
		if err != nil {
			var le *state.LockedError
			if errors.As(err, &le) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond) // the owner is starting or ending
				continue
			}
			return stateErrLocked(err, runID, g.StateDir)
		}
		defer store.Close()
		snap, prior, plan, err := loadOwned(store, runID, g.StateDir)
		if err != nil {
			return err
		}
		changed, evs, err := exec.Classify(plan, prior.Steps, step, action, reason)
		if err != nil {
			return withCode(exitUsage, err)
		}
		exec.Stamp(evs, snap.LastSeq, runID, nowFunc())
		if err := (storeAdapter{store}).Commit(nil, changed, evs); err != nil {
			return withCode(exitState, err)
		}
		return nil
	}
}

func stateErrLocked(err error, runID, dir string) error {
	var le *state.LockedError
	if errors.As(err, &le) {
		return withCode(exitState, fmt.Errorf("run %s is active in process %d and did not answer", runID, le.PID))
	}
	return stateErr(err, runID, dir)
}
