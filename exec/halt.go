package exec

import "fmt"

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
	if out.logErr != nil {
		return &LogError{Step: sr.def.ID, Kind: kind, Err: out.logErr}
	}
	if r.CheckState != nil {
		return r.CheckState()
	}
	return nil
}
