package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
	"github.com/faber-run/faber/state"
)

// RecoverCmd lets an agent classify pending steps, then resumes.
type RecoverCmd struct {
	RunRef `embed:""`
	Agent  string `name:"agent" placeholder:"CMD" help:"Agent command line (default: the plan's agent:, else 'claude -p')."`
	JSON   bool   `name:"json" help:"The resume's progress as one JSON event per line (--ui json); the agent's output stays on stderr."`
}

// Help explains recover.
func (c *RecoverCmd) Help() string {
	return `Runs an AI agent to decide on the run's pending_failed steps, then resumes
the run. The agent is --agent (split into words like a shell would, without
expansions), else the plan's agent:, else 'claude -p'. It gets one more
argument, a prompt that names the run and its pending steps and tells it to
decide on each with the MCP tools of 'faber mcp' or with 'faber classify',
and nothing else. Its environment adds FABER_RUN_ID and FABER_STATE_DIR
(absolute) and FABER_RESULT, a file where it may report what it spent
({"cost_usd": 0.42, "turns": 7, "tokens": 12000}): recorded as an
agent_spent event, it counts toward the plan's budget. Its stdin is empty;
its output goes to stderr, each line prefixed with agent:. faber must be in
the agent's PATH, and the agent must be allowed to run it (or to use the
faber MCP server) without asking.

Budgets: once the plan's budget is spent, recover asks no agent and exits
3. A step that failed because its budget was spent is left for a person
(faber classify RUN STEP --retry spends more): the agent is not asked about
it, and when no other step waits, recover exits 3 without an agent or a
resume.

After the agent exits 0, faber resumes the run (steps the agent left
pending_failed still wait, and the run exits 3 again) and exits with the
run's code. If the agent exits non-zero, faber does not resume: its
decisions so far stand, and faber exits 1. A run with no pending_failed
steps is resumed without an agent. An agent that cannot be found exits 2; a
run that is active in another process exits 4.

Examples:
  faber recover <run-id>
  faber recover <run-id> --agent 'claude -p --allowedTools "Bash(faber:*)"'`
}

// Run runs the agent, then resumes.
func (c *RecoverCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	v, err := run.View(g.StateDir, c.RunID)
	if err != nil {
		return err
	}
	if o, err := state.OwnerOf(g.StateDir, c.RunID); err == nil && o.Alive {
		return withCode(exitState, fmt.Errorf("run %s is active in process %d: decide on its steps with faber classify (it goes on by itself), or wait for it to end", c.RunID, o.PID))
	}
	// The agent's decisions and the resume need the run's store: a damaged
	// one is said now, before an agent spends its time on the run.
	plan, err := checkOwnable(g, c.RunID)
	if err != nil {
		return err
	}
	ps, err := run.Pending(g.StateDir, c.RunID)
	if err != nil {
		return err
	}
	ui := "plain"
	if c.JSON {
		ui = "json"
	}
	resume := func() error { return resumeSession(g, c.RunID, run.ResumeOptions{}, sessionArgs{ui: ui}) }
	if len(ps) == 0 {
		if v.Run.Status != exec.RunSuccess {
			fmt.Fprintf(g.stderr, "faber: run %s has no pending_failed steps; resuming it without an agent\n", c.RunID)
		}
		return resume()
	}

	// Budgets (README "Budgets"): no agent call once the plan's budget is
	// spent, and none about a step whose budget is: a retry of it spends
	// more, which is a person's decision.
	if why := exec.PlanBudgetReached(plan, &v.Run, v.Steps); why != "" {
		fmt.Fprintf(g.stderr, "faber: recover: the plan's budget is spent (%s): no agent is asked; decide with faber classify %s STEP --retry|--fail, then faber resume %s\n",
			why, c.RunID, c.RunID)
		return codeOnly(exitPending)
	}
	ps, person := run.ForAgent(v, ps)
	for _, p := range person {
		fmt.Fprintf(g.stderr, "faber: recover: step %q is left for a person: %s; faber classify %s %s --retry spends more\n",
			p.StepID, run.FirstLine(p.Error), c.RunID, p.StepID)
	}
	if len(ps) == 0 {
		return codeOnly(exitPending)
	}

	argv, err := run.AgentArgv(c.Agent, plan)
	if err != nil {
		return err
	}
	path, err := osexec.LookPath(argv[0])
	if err != nil {
		return withCode(exitUsage, run.AgentNotFound(argv[0], err))
	}
	stateDir := g.StateDir // absolute (Main)

	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.StepID
	}
	fmt.Fprintf(g.stderr, "faber: asking %s to decide on %d pending_failed step(s) of run %s: %s\n",
		subst.Join(argv), len(ps), c.RunID, strings.Join(ids, ", "))

	result, err := run.AgentResultFile(stateDir, c.RunID)
	if err != nil {
		return err
	}
	defer os.Remove(result)
	ctx, _, _, stop := signalContext()
	cmd := osexec.CommandContext(ctx, path, append(argv[1:], run.RecoverPrompt(c.RunID, stateDir, ps))...)
	cmd.Args[0] = argv[0]
	cmd.Env = append(os.Environ(), "FABER_RUN_ID="+c.RunID, "FABER_STATE_DIR="+stateDir, "FABER_RESULT="+result)
	// stdin stays nil: the agent reads /dev/null and never waits for input.
	out := &prefixWriter{w: g.stderr, prefix: "agent: "}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second // after exit or Ctrl-C, for pipes a child keeps open
	err = cmd.Run()
	out.Flush()
	interrupted := ctx.Err() != nil
	stop() // resume watches the signals itself
	// What the agent spent counts however it ended.
	if rerr := c.recordSpent(g, result); rerr != nil {
		return rerr
	}
	if interrupted {
		fmt.Fprintf(g.stderr, "faber: interrupted; run %s was not resumed (faber resume %s continues it)\n", c.RunID, c.RunID)
		return codeOnly(exitInterrupted)
	}
	if err != nil {
		var ee *osexec.ExitError
		if !errors.As(err, &ee) {
			return withCode(exitState, fmt.Errorf("agent %s: %w", argv[0], err))
		}
		return withCode(exitFailed, fmt.Errorf("agent %s failed (%s); run %s was not resumed: see faber pending %s, then faber resume %s",
			argv[0], ee.ProcessState, c.RunID, c.RunID, c.RunID))
	}

	left, err := run.Pending(g.StateDir, c.RunID)
	if err != nil {
		return err
	}
	ids = ids[:0]
	for _, p := range left {
		if !slices.ContainsFunc(person, func(q run.PendingStep) bool { return q.StepID == p.StepID }) {
			ids = append(ids, p.StepID)
		}
	}
	if len(ids) > 0 {
		fmt.Fprintf(g.stderr, "faber: warning: the agent left %d step(s) pending_failed: %s\n", len(ids), strings.Join(ids, ", "))
	}
	fmt.Fprintf(g.stderr, "faber: agent done; resuming run %s\n", c.RunID)
	return resume()
}

// recordSpent records what the agent reported in its result file on the
// run (agent_spent), where the plan's budget counts it; with an owner
// alive it records nothing and says so.
func (c *RecoverCmd) recordSpent(g *Globals, result string) error {
	sp, bad := exec.ReadSpent(result)
	if bad != "" {
		fmt.Fprintf(g.stderr, "faber: warning: the agent's $FABER_RESULT: %s; not counted\n", bad)
	}
	if sp.IsZero() {
		return nil
	}
	owner, err := run.RecordAgentSpent(g.StateDir, c.RunID, sp, storeOptions(g))
	if err != nil {
		return err
	}
	if owner != 0 {
		fmt.Fprintf(g.stderr, "faber: warning: run %s is active in process %d: what the agent spent is not recorded\n", c.RunID, owner)
	}
	return nil
}

// checkOwnable opens the run's store and loads it, as resume will, and
// closes it again: the errors are resume's. It returns the stored plan.
func checkOwnable(g *Globals, runID string) (*spec.Plan, error) {
	store, err := run.Open(g.StateDir, runID, storeOptions(g))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	_, _, plan, err := run.LoadOwned(store, runID, g.StateDir)
	return plan, err
}

// prefixWriter writes whole lines, each with a prefix; it is safe for the
// agent's stdout and stderr at once.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), nil // the agent must not die of our stderr
		}
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > 64<<10 { // a very long line: pass it on in pieces
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// Flush writes a last line that had no newline.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.buf = nil
	}
}
