package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// StopCmd stops an active run from another terminal.
type StopCmd struct {
	RunRef `embed:""`
	Hard   bool `name:"hard" help:"Kill the run's processes at once (SIGKILL), like a second Ctrl-C."`
	NoWait bool `name:"no-wait" help:"Return once the run has the request, without waiting for it to end."`
	JSON   bool `name:"json" help:"Print {run_id, status} at the end (status: the run's, or null with --no-wait); messages go to stderr."`
}

// stopped prints how the run ended (status "" with --no-wait).
func (c *StopCmd) stopped(g *Globals, status string) {
	if c.JSON {
		out := struct {
			RunID  string  `json:"run_id"`
			Status *string `json:"status"`
		}{RunID: c.RunID}
		if status != "" {
			out.Status = &status
		}
		printJSON(g.stdout, out)
		return
	}
	if status != "" {
		fmt.Fprintf(g.stdout, "run %s %s\n", c.RunID, status)
	}
}

// Help explains stop.
func (c *StopCmd) Help() string {
	return `Does to a run that another faber process owns what Ctrl-C does in that
process: running steps get SIGTERM, then SIGKILL after their kill_grace; they
become interrupted, nothing new starts, and the run ends interrupted and
resumable. --hard is the second Ctrl-C: every process of the run is killed
at once. stop waits for the run to end and exits as its owner does (130 for
an interrupted run; the run's own code if it ended first); --no-wait returns
0 as soon as the owner has the request. A run that is not active exits 4.

A run whose faber died (kill -9, a crash) while steps ran is taken over as
resume does and stopped before anything starts: leftover processes are
ended, batch jobs that outlived faber (Slurm, Grid Engine) are stopped as
running steps, and the run ends interrupted (exit 130), resumable.

Examples:
  faber stop --last
  faber stop dataset-create-2026 --hard`
}

// Run sends the owner the request and waits for the run to end.
func (c *StopCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	o, err := state.OwnerOf(g.StateDir, c.RunID)
	if err != nil {
		return run.StoreError(err, c.RunID, g.StateDir)
	}
	if !o.Alive {
		v, err := run.View(g.StateDir, c.RunID)
		if err != nil {
			return err
		}
		if !leftRunning(v) {
			return withCode(exitState, fmt.Errorf("run %s is not active (it ended %s): nothing to stop", c.RunID, v.Run.Status))
		}
		// Its faber died (kill -9, a crash, a closed terminal) and may
		// have left batch jobs running, or processes: take the run over
		// as resume does, and stop it at once. What resume would
		// re-attach to is stopped as a running step is; nothing new
		// starts; the run ends interrupted and resumable.
		fmt.Fprintf(g.stderr, "run %s has no faber (it died); ending what it left running\n", c.RunID)
		if !c.JSON {
			return resumeSession(g, c.RunID, run.ResumeOptions{Stopping: true}, sessionArgs{ui: "plain", stopAtStart: true})
		}
		quiet := *g // its progress to stderr: stdout is the JSON result
		quiet.stdout = g.stderr
		err = resumeSession(&quiet, c.RunID, run.ResumeOptions{Stopping: true}, sessionArgs{ui: "plain", stopAtStart: true})
		if v, verr := run.View(g.StateDir, c.RunID); verr == nil {
			c.stopped(g, v.Run.Status)
		}
		return err
	}
	rep, ok, err := control.Send(state.RunDir(g.StateDir, c.RunID), control.Msg{Op: "stop", Hard: c.Hard})
	switch {
	case err != nil:
		return withCode(exitState, err)
	case !ok:
		// No channel (the owner could not open one), or the owner is
		// already ending: a signal does what the request would (SIGTERM is
		// Ctrl-C to faber; a second one is the hard stop).
		if err := signalOwner(o.PID, c.Hard); err != nil {
			return withCode(exitState, fmt.Errorf("run %s (process %d) has no control channel and cannot be signalled: %v", c.RunID, o.PID, err))
		}
	case !rep.OK:
		return withCode(exitState, fmt.Errorf("run %s (process %d) refused to stop: %s", c.RunID, o.PID, rep.Error))
	}
	how := "stopping"
	if c.Hard {
		how = "killing"
	}
	fmt.Fprintf(g.stderr, "%s run %s (process %d)\n", how, c.RunID, o.PID)
	if c.NoWait {
		c.stopped(g, "")
		return nil
	}
	for {
		if o, err := state.OwnerOf(g.StateDir, c.RunID); err != nil || !o.Alive {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	v, err := run.View(g.StateDir, c.RunID)
	if err != nil {
		return err
	}
	c.stopped(g, v.Run.Status)
	if v.Run.Status != exec.RunSuccess {
		fmt.Fprintf(g.stderr, "resume with: faber resume %s\n", c.RunID)
	}
	return codeOnly(exitCodeFor(v.Run.Status))
}

// signalOwner sends the run's owner SIGTERM, twice for a hard stop. The
// owner is alive (it holds the run's lock), so the pid is its.
func signalOwner(pid int, hard bool) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if hard {
		time.Sleep(100 * time.Millisecond) // two signals, not one coalesced
		return p.Signal(syscall.SIGTERM)
	}
	return nil
}

// leftRunning reports whether a run whose owner is gone has steps it
// recorded active (an attempt, a handler, a retry's recovery script or
// delay): their processes or batch jobs may still run, and resume finds
// them orphaned.
func leftRunning(v *exec.View) bool {
	for _, st := range v.Steps {
		if exec.Status(st.Status).Active() {
			return true
		}
	}
	return false
}
