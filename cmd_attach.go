package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// attachPoll is how often attach reads the run's event log and the log files
// of its running steps.
const attachPoll = 150 * time.Millisecond

// AttachCmd shows the live view of a run that another faber process owns.
type AttachCmd struct {
	RunRef `embed:""`
	Resume bool `name:"resume" help:"If the run's faber died while batch jobs of its steps ran: resume the run here without asking (see below)."`
	// fromUI is set by faber ui, whose board comes back when the view is
	// left: no hints on how to come back.
	fromUI bool
}

// Help explains attach.
func (c *AttachCmd) Help() string {
	return `Shows the live view of a run that another faber process runs (after q in
its own live view, or started from another terminal), rebuilt from the run's
event log; the log pane follows the running step's output, read from its log
files. q or Ctrl-C leave the view and do nothing to the run (faber stop
stops it); leaving exits 0.

When the run ends, the view gives way to the run's summary and attach exits
with the run's code, as its owner does (0 success, 1 failed, 3
pending_failed, 130 interrupted). A run that has already ended shows its
summary at once. Needs a terminal: without one, 'faber events RUN --follow'
prints the same events as lines.

If the run's faber died (kill -9, a crash, its machine) while batch jobs of
its steps (executor: slurm or sge) were queued or running, attach shows the
summary, names the jobs, and asks whether to resume the run now: y resumes
it in this terminal as 'faber resume RUN' does, which re-attaches to those
jobs (no new attempt), records how they end and goes on with the run, and
exits as resume does; anything else leaves the run as it is, and attach
exits with the run's code (130). --resume answers y without asking.

Examples:
  faber attach --last
  faber watch dataset-create-2026
  faber attach --resume RUN       resume a run whose faber died, jobs and all`
}

// Run shows the view until the run ends or the user leaves.
func (c *AttachCmd) Run(g *Globals) error {
	if err := c.resolve(g); err != nil {
		return err
	}
	id := c.RunID
	if !attachTerminal(g) {
		return withCode(exitUsage, fmt.Errorf("attach needs a terminal; use faber events %s --follow", id))
	}
	// meta.json gives the plan; without it (damaged) the event log still
	// tells the steps.
	meta, err := state.ReadMeta(g.StateDir, id)
	if err != nil && !errors.Is(err, state.ErrDamaged) {
		return run.StoreError(err, id, g.StateDir)
	}
	plan := run.StoredPlan(g.StateDir, id, meta)
	var steps []tui.StepDef
	if plan != nil {
		steps = stepDefs(plan)
	}
	opt := tui.Options{Plan: meta.Plan, RunID: id, Steps: steps, Styles: tui.NewStyles(useColor(g, g.stdout)),
		Attached: true, ResumeHint: true, OnClassify: classifier(g, id), OnDecide: gateDecider(g, id), Usage: usageAsker(g, id),
		Estimate: estimator(g, plan), Budgets: budgeter(plan)}

	// The owner is looked at before the log is read: once it is gone, that
	// read got every event the run will ever have.
	alive := run.OwnerAlive(g.StateDir, id)
	caught := &run.Collected{}
	f := run.NewFollower(g.StateDir, id, caught)
	f.SetPlan(plan)
	if err := f.Poll(); err != nil {
		return err
	}
	warnDamaged(g, f.Damaged())
	if !alive {
		status, err := f.Finish()
		if err != nil {
			return err
		}
		fmt.Fprint(g.stdout, tui.SummaryOf(opt, caught.Events))
		// faber ui's board comes back after attach: it asks nothing.
		if jobsLeft(g, id) && !c.fromUI && (c.Resume || askResume(g, id)) {
			return resumeFromAttach(g, id)
		}
		return codeOnly(exitCodeFor(status))
	}

	t := tui.New(g.stdout, g.stdin, opt)
	for _, e := range caught.Events {
		t.Event(e)
	}
	f.SetSink(t)
	// In raw mode Ctrl-C is a key; a signal (kill, or one that came before
	// the terminal was set up) leaves the view the same way.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	tick := time.NewTicker(attachPoll)
	defer tick.Stop()
	for {
		select {
		case <-t.Left():
			f.Close()
			if err := t.Err(); err != nil && !t.Detached() {
				return fmt.Errorf("the live view stopped (%v); faber events %s --follow shows the run as lines", err, id)
			}
			if c.fromUI {
				return nil
			}
			fmt.Fprintf(g.stdout, "left the live view of run %s; the run goes on\n"+
				"  faber attach %s   shows it again\n"+
				"  faber stop %s     stops it (resumable)\n", id, id, id)
			return nil
		case <-sigs:
			t.Leave()
			continue
		case <-tick.C:
		}
		alive := run.OwnerAlive(g.StateDir, id)
		if err := f.Poll(); err != nil {
			t.Leave()
			<-t.Left()
			f.Close()
			return err
		}
		if alive {
			continue
		}
		status, err := f.Finish()
		t.Close()
		if err != nil {
			return err
		}
		return codeOnly(exitCodeFor(status))
	}
}

// jobsLeft tells, of a run whose faber died, the batch jobs its running
// steps had: they may run on; resume re-attaches to them, stop cancels
// them. It reports whether there were any.
func jobsLeft(g *Globals, id string) bool {
	v, err := run.View(g.StateDir, id)
	if err != nil {
		return false
	}
	var jobs []string
	for _, st := range v.Steps {
		if st.Job != "" && st.Status == exec.StatusInProgress {
			jobs = append(jobs, st.ID+" ("+st.Job+")")
		}
	}
	if len(jobs) > 0 {
		fmt.Fprintf(g.stderr, "faber: the run's faber died while these steps' batch jobs ran, which may run on: %s\n"+
			"  faber resume %s   re-attaches to them and records how they end\n"+
			"  faber stop %s     cancels them (the run ends interrupted)\n", strings.Join(jobs, ", "), id, id)
	}
	return len(jobs) > 0
}

// askResume asks on the terminal whether to resume the run whose faber
// died while its batch jobs ran. Only y or yes (then Enter) is a yes; EOF
// and Ctrl-C (a signal: the terminal is not in raw mode here) are a no.
func askResume(g *Globals, id string) bool {
	fmt.Fprintf(g.stdout, "resume run %s now? it re-attaches to these jobs, records how they end, and goes on [y/N] ", id)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// The line typed, or nil at EOF (or a read error) before Enter.
	answer := make(chan []byte, 1)
	// One byte at a time: nothing past the line is taken from the
	// terminal, which the resume's live view reads next.
	go func() {
		line := []byte{}
		b := make([]byte, 1)
		for {
			n, err := g.stdin.Read(b)
			if n == 1 && b[0] == '\n' {
				answer <- line
				return
			}
			if n == 1 {
				line = append(line, b[0])
			}
			if err != nil {
				answer <- nil
				return
			}
		}
	}()
	select {
	case a := <-answer:
		if a == nil {
			fmt.Fprintln(g.stdout) // the shell's prompt on a line of its own
			return false
		}
		s := strings.TrimSpace(string(a))
		return strings.EqualFold(s, "y") || strings.EqualFold(s, "yes")
	case <-sigs:
		fmt.Fprintln(g.stdout)
		return false
	}
}

// resumeFromAttach resumes the run as 'faber resume RUN' in this terminal
// would (ResumeCmd: a background owner running "resume RUN" when the live
// view can detach), and exits as it does.
func resumeFromAttach(g *Globals, id string) error {
	args := []string{"resume", id, "--state-dir=" + g.StateDir}
	if g.NoColor {
		args = append(args, "--no-color")
	}
	if g.Verbose {
		args = append(args, "--verbose")
	}
	r := &ResumeCmd{RunID: id, UI: "auto", ownerArgs: args}
	return r.Run(g)
}

// attachTerminal reports whether stdin and stdout are terminals. Unlike
// --ui auto, CI does not matter (a person asked for the view), but a dumb
// terminal cannot draw it.
func attachTerminal(g *Globals) bool {
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	in, ok1 := g.stdin.(*os.File)
	out, ok2 := g.stdout.(*os.File)
	return ok1 && ok2 && isatty.IsTerminal(in.Fd()) && isatty.IsTerminal(out.Fd())
}
