package run

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
	"github.com/faber-run/faber/state"
)

// AgentArgv is the agent faber recover runs: agent (its --agent) split into
// words, else the stored plan's agent:, else claude -p. An agent line that
// cannot be split is a usage error.
func AgentArgv(agent string, plan *spec.Plan) ([]string, error) {
	if strings.TrimSpace(agent) != "" {
		words, err := subst.Words(agent)
		if err != nil {
			return nil, usage(fmt.Errorf("--agent: %w", err))
		}
		return words, nil
	}
	if len(plan.Agent) > 0 && plan.Agent[0] != "" {
		return plan.Agent, nil
	}
	return []string{"claude", "-p"}, nil
}

// AgentNotFound says why the agent name cannot be run: not in PATH, or
// what is wrong with the path.
func AgentNotFound(name string, err error) error {
	if !strings.ContainsRune(name, filepath.Separator) && errors.Is(err, osexec.ErrNotFound) {
		return fmt.Errorf("agent %q not found in PATH: install it or pass --agent", name)
	}
	// A path: say what is wrong with it (missing, not executable).
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u
	}
	return fmt.Errorf("agent %q cannot be run: %v: fix it or pass --agent", name, err)
}

// RecoverPrompt tells the agent which run to look at, what waits, and the only
// things it may do about it.
func RecoverPrompt(runID, stateDir string, ps []PendingStep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are deciding on failed steps of the faber workflow run %s (state dir %s, also in $FABER_STATE_DIR).\n", runID, stateDir)
	fmt.Fprintf(&b, "%d step(s) failed and wait as pending_failed for a decision:\n", len(ps))
	for _, p := range ps {
		code := "none"
		if p.ExitCode != nil {
			code = fmt.Sprint(*p.ExitCode)
		}
		fmt.Fprintf(&b, "\n- step %s (attempt %d, exit code %s): %s\n", p.StepID, p.Attempt, code, clip(FirstLine(p.Error), 300))
		if p.Hint != "" {
			fmt.Fprintf(&b, "  hint: %s\n", p.Hint)
		}
		tail := p.StderrTail
		if len(tail) > 10 {
			tail = tail[len(tail)-10:]
		}
		if len(tail) > 0 {
			b.WriteString("  last stderr lines:\n")
		}
		for _, l := range tail {
			fmt.Fprintf(&b, "    | %s\n", clip(l, 300))
		}
	}
	fmt.Fprintf(&b, `
For each step, decide:
- retry if the failure looks transient (connection refused or reset, timeouts, rate limits, preemption, a service that was unavailable, I/O errors);
- fail if it would happen again unchanged (syntax, import or type errors, a missing file or command, permission denied, bad configuration or arguments), or if you are unsure.

How:
- With the faber MCP tools (server: faber mcp): list_pending_failed_jobs and get_step_logs to read more, then classify_and_resolve_failures with run_id %[1]q and one {step_id, action, reason} per step.
- Or on the command line: faber pending %[1]s, faber logs %[1]s STEP --stderr, then for each step
  faber classify %[1]s STEP --retry --reason "why"   or   faber classify %[1]s STEP --fail --reason "why"

Give each decision a short, specific reason. Do nothing else: do not edit files, do not run the steps yourself, do not run faber resume or reset. faber resumes the run when you exit.
`, runID)
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " …"
}

// ForAgent splits a run's pending_failed steps into those the recover
// agent decides on and those left for a person: a step whose last attempt
// ended for a spent budget, which a retry would spend more of (README
// "pending_failed, classify, MCP, recover").
func ForAgent(v *exec.View, ps []PendingStep) (agent, person []PendingStep) {
	budget := map[string]bool{}
	for _, st := range v.Steps {
		if st.Status == exec.StatusPendingFailed && exec.FailedOnBudget(st) {
			budget[st.ID] = true
		}
	}
	for _, p := range ps {
		if budget[p.StepID] {
			person = append(person, p)
		} else {
			agent = append(agent, p)
		}
	}
	return agent, person
}

// AgentResultFile makes a fresh, empty, private file in the run's
// directory for the recover agent's $FABER_RESULT.
func AgentResultFile(stateDir, runID string) (string, error) {
	f, err := os.CreateTemp(state.RunDir(stateDir, runID), "recover-*.result.json")
	if err != nil {
		return "", stateProblem(fmt.Errorf("run %s: a result file for the agent: %w", runID, err))
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", stateProblem(err)
	}
	return name, nil
}

// RecordAgentSpent records what the recover agent reported spending on a
// run that has no live owner: an agent_spent event, and the run record's
// Spent, from which a resumed run's plan budget starts. A run whose owner
// is alive gets nothing: owner is its process id, and the caller says so.
func RecordAgentSpent(stateDir, runID string, sp exec.Spent, opt state.Options) (owner int, err error) {
	store, err := state.Open(stateDir, runID, opt)
	if err != nil {
		var le *state.LockedError
		if errors.As(err, &le) {
			return le.PID, nil
		}
		return 0, StoreError(err, runID, stateDir)
	}
	defer store.Close()
	control.Forget(store.Dir()) // a dead owner's; this process holds the lock
	snap, prior, err := LoadRecords(store, runID, stateDir)
	if err != nil {
		return 0, err
	}
	evs := []exec.Event{exec.SpendOnRun(prior.Run, sp)}
	exec.Stamp(evs, snap.LastSeq, runID, time.Now())
	if err := (Recorder{store}).Commit(prior.Run, nil, evs); err != nil {
		return 0, stateProblem(err)
	}
	return 0, nil
}
