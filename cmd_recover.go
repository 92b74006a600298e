package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
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
(absolute); its stdin is empty; its output goes to stderr, each line
prefixed with agent:. faber must be in the agent's PATH, and the agent must
be allowed to run it (or to use the faber MCP server) without asking.

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

	ctx, _, _, stop := signalContext()
	cmd := osexec.CommandContext(ctx, path, append(argv[1:], run.RecoverPrompt(c.RunID, stateDir, ps))...)
	cmd.Args[0] = argv[0]
	cmd.Env = append(os.Environ(), "FABER_RUN_ID="+c.RunID, "FABER_STATE_DIR="+stateDir)
	// stdin stays nil: the agent reads /dev/null and never waits for input.
	out := &prefixWriter{w: g.stderr, prefix: "agent: "}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second // after exit or Ctrl-C, for pipes a child keeps open
	err = cmd.Run()
	out.Flush()
	interrupted := ctx.Err() != nil
	stop() // resume watches the signals itself
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
	if len(left) > 0 {
		ids = ids[:0]
		for _, p := range left {
			ids = append(ids, p.StepID)
		}
		fmt.Fprintf(g.stderr, "faber: warning: the agent left %d step(s) pending_failed: %s\n", len(left), strings.Join(ids, ", "))
	}
	fmt.Fprintf(g.stderr, "faber: agent done; resuming run %s\n", c.RunID)
	return resume()
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
