package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// Display is what a session feeds its run's progress to: the command line's
// plain or JSON-lines progress, or the live view. The session closes it once
// the run has ended, before it closes the store.
type Display interface {
	exec.Sink
	Close() error
}

// Session is one session of a run, from the process that owns it: a new
// run (its store just created) or one taken over by ResumeSession. It runs
// the plan with the run's control channel (faber classify, faber stop)
// open, cleans what dead fabers left in the state dir beside the run,
// closes the store, and tells a parent run why a child run did not succeed.
// The caller chooses and prints: its display, the signals, what the
// outcome means for the exit code.
type Session struct {
	StateDir string // absolute (every path a step is given derives from it)
	RunID    string
	Plan     *spec.Plan
	// Store is the run's store, owned by the session from Run on: Run
	// closes it.
	Store *state.Store
	// Prior is the state a resumed run starts from (nil for a new run).
	Prior *exec.Prior

	Jobs     int  // 0: the plan's jobs, else the CPU count
	FailFast bool // run's and resume's --fail-fast
	NoCache  bool // run's --no-cache
	Force    []string
	// Capacity is the run's resolved capacity (Capacity): what its running
	// steps may reserve at once; a 0 field is no limit.
	Capacity spec.Capacity

	// OutputDir is, for a child run (a parent's sub-plan step), the
	// parent's outputs dir that it shares; "" for runs/<run-id>/outputs.
	OutputDir string
	// ResultFile is, for a child run, the parent step's $FABER_RESULT:
	// when the run does not succeed, the session writes there which of
	// its steps failed and why (the sub-plan result handshake; the parent
	// step reads it as any step's result file).
	ResultFile string
	// OutputsFile is, for a child run, the parent step's $FABER_OUTPUTS:
	// when the run succeeds, the session appends there what the plan's
	// outputs: declares.
	OutputsFile string

	// Self is the argv prefix that runs faber itself (sub-plan steps).
	Self []string
	// Interrupt (required) does what Ctrl-C does in the owner (a graceful
	// stop, or a hard one): faber stop reaches it through the control
	// channel.
	Interrupt func(hard bool)
	// HardStop, when closed, kills every running process at once.
	HardStop <-chan struct{}

	// Show (required) returns the display to feed, once the session knows whether it
	// has a control channel (the live view's r / x x reach the session
	// through it), and, for a display that decides on pending_failed steps
	// (the live view), the channel that makes the session wait for its
	// decisions (exec.Runner.WaitDecisions); nil for progress that does not
	// decide.
	Show func(control bool) (Display, <-chan struct{})
	// WantOutput sends the steps' output lines to the display.
	WantOutput bool
	// Warn, if set, is told what the session does without (a control
	// channel that cannot start).
	Warn func(msg string)
	// Grown, if set, is told the plan's number of steps before the run,
	// and again when a dynamic fan-out has read its items (faber sets the
	// collector's pace from it).
	Grown func(steps int)
	// CacheHit, if set, is told of the run's first cache hit (see
	// exec.Runner.CacheHit).
	CacheHit func()
}

// Outcome is how a session ended: the run's status and its steps' records
// (what hints at the next thing to do).
type Outcome struct {
	Status string
	States []*exec.StepState
}

// StoppedError is a session the runner stopped on a problem of faber's own,
// not a step's: the state dir full or unwritable, a child run's state, or
// faber out of files, processes or memory. What was committed stands: once
// the cause is fixed, the run can be resumed.
type StoppedError struct {
	RunID string
	Err   error
}

func (e *StoppedError) Error() string { return e.Err.Error() }
func (e *StoppedError) Unwrap() error { return e.Err }

// ResumeSession takes over a run that is not active for a new session
// (Resume): the session with its plan, store and prior state, for the
// caller to complete and run, and what Resume found, which the caller says
// (Resumable.Warnings, leftover jobs canceled). On an error nothing is
// owned: the store is closed.
func ResumeSession(stateDir, runID string, opt state.Options, o ResumeOptions) (*Session, *Resumable, error) {
	res, err := Resume(stateDir, runID, opt, o)
	if err != nil {
		return nil, nil, err
	}
	return &Session{StateDir: stateDir, RunID: runID, Plan: res.Plan, Store: res.Store, Prior: res.Prior, Capacity: res.Capacity}, res, nil
}

// Run runs the session to its end and closes the store. The error is a
// state problem: a *StoppedError when the runner stopped on one (the run
// can be resumed), else a store that could not be closed (a *StateError).
// A run that ends failed, pending_failed or interrupted is no error: see
// Outcome.Status.
func (s *Session) Run(ctx context.Context) (Outcome, error) {
	// What dead fabers left in this state dir is cleaned beside the run,
	// which does not wait for it (it waits at its end).
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		CleanLeftovers(s.StateDir, s.RunID)
	}()
	defer func() { <-cleaned }()
	ctl, err := control.Start(s.Store.Dir(), s.Interrupt)
	if err != nil && s.Warn != nil {
		s.Warn(fmt.Sprintf("no control channel (faber classify will wait for the run to end): %v", err))
	}
	display, decisions := s.Show(ctl != nil)
	r := &exec.Runner{
		Self:       s.Self,
		StateDir:   s.StateDir,
		NewRunID:   func(name string, now time.Time) string { return state.NewRunID(s.StateDir, name, now) },
		OutDir:     s.OutputDir,
		Plan:       s.Plan,
		RunID:      s.RunID,
		RunDir:     s.Store.Dir(),
		Store:      Recorder{Store: s.Store},
		Sink:       display,
		Jobs:       s.Jobs,
		Capacity:   s.Capacity,
		FailFast:   s.FailFast,
		WantOutput: s.WantOutput,
		HardStop:   s.HardStop,
		Cache:      Cache{StateDir: s.StateDir, Sync: s.Store.Synced()},
		NoCache:    s.NoCache,
		Force:      s.Force,
	}
	if m, err := state.ReadMeta(s.StateDir, s.RunID); err == nil {
		r.Secrets = m.Secrets // with those a parent run handed a child run
	}
	if ctl != nil {
		r.Control = ctl.Requests()
	}
	// A pending_failed step that is all that is left waits in the live
	// view for r / x x / q instead of ending the run (README,
	// "pending_failed"); plain and JSON progress end at once.
	r.WaitDecisions = decisions
	r.CheckState = func() error { return state.CheckSpace(s.StateDir, s.RunID) }
	// The pace follows the steps the run holds: a resumed run's plan has
	// its dynamic fan-outs' items now, a running one when it reads them.
	if s.Grown != nil {
		s.Grown(len(s.Plan.Steps))
		r.Grown = s.Grown
	}
	r.CacheHit = s.CacheHit
	status, runErr := r.Run(ctx, s.Prior)
	if ctl != nil {
		ctl.Stop()
	}
	display.Close()
	closeErr := s.Store.Close()
	if runErr != nil {
		return Outcome{}, &StoppedError{RunID: s.RunID, Err: runErr}
	}
	if closeErr != nil {
		// A store that cannot be written (a read-only or vanished run
		// directory, I/O errors) is a state problem: its commits are in
		// its log (if the directory is still there), which the next
		// opening replays.
		msg := strings.ReplaceAll(closeErr.Error(), "\n", "; ")
		return Outcome{}, stateProblem(fmt.Errorf("%s; fix the state dir, then see what was recorded: faber status %s", msg, s.RunID))
	}
	out := Outcome{Status: status, States: r.States()}
	if s.OutputsFile != "" && status == exec.RunSuccess && len(s.Plan.OutputKeys) > 0 {
		outs, missing := exec.PlanOutputs(s.Plan, s.RunID, out.States)
		for _, m := range missing {
			s.warnf("outputs: %s; the parent step does not get it", m)
		}
		if err := exec.AppendOutputs(s.OutputsFile, outs); err != nil {
			s.warnf("outputs: %v", err)
		}
	}
	if s.ResultFile != "" && status != exec.RunSuccess {
		writeChildResult(s.ResultFile, s.RunID, status, out.States, exec.NewMaskerOf(append(exec.SecretValues(s.Plan), r.Secrets...)))
	}
	return out, nil
}

// writeChildResult tells the parent step why a child run did not succeed:
// the parent's {error} names the child's failed steps and their errors.
// The errors are masked: the parent does not know the child plan's secrets.
func writeChildResult(path, runID, status string, states []*exec.StepState, mask *exec.Masker) {
	var parts []string
	for _, st := range states {
		if exec.Status(st.Status).Failed() {
			parts = append(parts, fmt.Sprintf("step %s %s: %s", st.ID, st.Status, FirstLine(st.Error)))
		}
	}
	msg := fmt.Sprintf("child run %s %s", runID, status)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	b, _ := json.Marshal(map[string]string{"status": "failure", "message": mask.String(msg)})
	_ = os.WriteFile(path, b, 0o600)
}

func (s *Session) warnf(format string, args ...any) {
	if s.Warn != nil {
		s.Warn(fmt.Sprintf(format, args...))
	}
}
