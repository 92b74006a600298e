package exec

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Halting: a state dir that cannot keep the run's record whole (a full
// disk, a log faber cannot write) stops the run as a state problem.

// halt stops the run because its state dir cannot keep its record whole: a
// log file faber cannot write, a file system found full after a step. It is
// an interrupt with a cause: running steps are terminated and become
// interrupted, nothing new starts, the run ends interrupted and Run returns
// the cause (faber exits 4). What is committed stays; resume re-runs the
// rest once the cause is gone.
func (r *Runner) halt(err error) {
	if r.halted != nil {
		return
	}
	r.halted = err
	r.commit(nil, Event{Type: EvWarning, Data: &Warning{Message: err.Error() + "; the run stops, resume it once that is fixed"}})
	r.interrupt(false)
}

// LogError is a log file of a step's process that faber could not create or
// write: its state dir is in trouble (a full disk, most often).
type LogError struct {
	Step string
	Kind string // attempt, handler or recovery
	Err  error
}

// Error names the step and the log.
func (e *LogError) Error() string {
	return fmt.Sprintf("cannot write the %s log of step %q: %v", e.Kind, e.Step, e.Err)
}

// Unwrap returns the OS error.
func (e *LogError) Unwrap() error { return e.Err }

// stateProblem is the reason a process's end cannot be taken at its word:
// its log is not whole, or the state dir's file system is full (in which
// case a log the process wrote itself may not be whole either, and the
// process may have failed only for want of space).
func (r *Runner) stateProblem(sr *stepRun, kind string, out outcome) error {
	if out.sysErr != nil {
		return &StartError{Step: sr.def.ID, Kind: kind, Err: out.sysErr}
	}
	if out.logErr != nil {
		return &LogError{Step: sr.def.ID, Kind: kind, Err: out.logErr}
	}
	if sr.def.PlanPath != "" && kind == "attempt" && out.exitCode == childStateExit && out.stoppedBy == "" && !out.timedOut && out.startErr == nil {
		return childStateError(sr.def.ID, out.stderrTail)
	}
	if r.CheckState != nil {
		return r.CheckState()
	}
	return nil
}

// StartError is a process faber could not start for want of its own
// resources: a file descriptor (its open-file limit), a process (the
// user's process limit) or memory. The step is not at fault, so the
// attempt does not count: the run stops as a state problem.
type StartError struct {
	Step string
	Kind string // attempt, handler or recovery
	Err  error
}

// Error names the step and what ran out.
func (e *StartError) Error() string {
	return fmt.Sprintf("cannot start the %s process of step %q: %v", e.Kind, e.Step, e.Err)
}

// Unwrap returns the OS error.
func (e *StartError) Unwrap() error { return e.Err }

// Scarce reports whether err is faber running out of something the system
// rations per process or user, rather than anything about a step: file
// descriptors (EMFILE, ENFILE), processes (EAGAIN from fork), memory.
//
// A fork that fails with EBADF counts too: Go's child fails so when a
// descriptor it gets is the last the open-file limit allows (atFileLimit
// names the limit where it can see the descriptors; a client command's
// pipes it cannot), and a file closed under faber is no step's doing
// either.
func Scarce(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Op == "fork/exec" && pe.Err == syscall.EBADF
}

// childStateExit is faber's exit code for a state problem (SPEC §1).
const childStateExit = 4

// ChildStateError is a sub-plan step whose child run stopped on a state
// problem (its own faber exited 4: out of descriptors, a full disk, its
// store): the step is not at fault, so the parent stops the same way, and
// its resume resumes the child.
type ChildStateError struct {
	Step string
	Msg  string // the child's line, without "faber: " and its resume hint
}

// Error names the step and says what stopped its child.
func (e *ChildStateError) Error() string {
	return fmt.Sprintf("the child run of step %q stopped: %s", e.Step, e.Msg)
}

// childStateError reads the child's one line from the end of its stderr.
func childStateError(step string, tail []byte) error {
	msg := lastLine(tail, nil)
	msg = strings.TrimPrefix(msg, "faber: ")
	if i := strings.LastIndex(msg, ", then: faber resume "); i >= 0 {
		msg = msg[:i]
	} else if i := strings.LastIndex(msg, "; faber resume "); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" {
		msg = "exit status 4 (a state problem)"
	}
	return &ChildStateError{Step: step, Msg: msg}
}
