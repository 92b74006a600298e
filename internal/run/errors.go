// Package run holds faber's use cases over the runs of a state dir, shared by
// the command line, the live view and the MCP server: a run's view rebuilt
// from its event log, its status and pending steps, taking ownership of a run
// that is not active, recording changes to it (classify, reset), following a
// run another process owns (its event log and its running steps' log files:
// attach, events --follow), listing runs, choosing the runs to prune, what a
// run would do (a dry run) and a plan's graph, recover's agent and prompt,
// and the typed errors that main maps to exit codes.
package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/faber-run/faber/state"
)

// UsageError is a request that cannot be done as asked (exit 2): a step that
// is not pending_failed, a reset of a step that does not exist.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// StateError is a state problem (exit 4): a run that is not there, held by
// another process, or whose records cannot be read.
type StateError struct{ Err error }

func (e *StateError) Error() string { return e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

func usage(err error) error { return &UsageError{Err: err} }

func stateProblem(err error) error { return &StateError{Err: err} }

// StoreError explains a store error of a run for a person: not found (with
// where it looked), damaged (with what can still be read), or as it is; all
// are state problems.
func StoreError(err error, runID, stateDir string) error {
	if errors.Is(err, state.ErrNotFound) {
		return stateProblem(fmt.Errorf("run %q not found in %s (faber list shows the runs there)", runID, stateDir))
	}
	var de *state.DamagedError
	if errors.As(err, &de) {
		return stateProblem(fmt.Errorf("%s; %s", de, StillReadable(de, stateDir)))
	}
	return stateProblem(err)
}

// StillReadable says, for a run whose store is damaged, that it cannot go
// on, and what of it can still be read: only what is, checked now.
func StillReadable(de *state.DamagedError, stateDir string) string {
	var can []string
	dir := state.RunDir(stateDir, de.RunID)
	events := filepath.Join(dir, "events.jsonl")
	if _, err := state.ReadLog(stateDir, de.RunID, 0); err == nil {
		can = append(can, fmt.Sprintf("its event log (faber events %s)", de.RunID))
	} else if fi, err := os.Stat(events); err == nil && fi.Size() > 0 {
		can = append(can, fmt.Sprintf("its event log (%s)", events))
	}
	logs := filepath.Join(dir, "logs")
	if fi, err := os.Stat(logs); err == nil && fi.IsDir() {
		can = append(can, fmt.Sprintf("its step logs (%s)", logs))
	}
	s := "it cannot be resumed, reset or classified"
	if len(can) > 0 {
		s += "; still readable: " + strings.Join(can, " and ")
	}
	return s
}
