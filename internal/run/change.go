package run

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/state"
)

// Classify records a decision on a pending_failed step (SPEC §6): through the
// run's owner when it is active, else in the run's store.
func Classify(stateDir, runID, step, action, reason string, opt state.Options) error {
	return ClassifyWith(stateDir, runID, step, action, reason, exec.Limits{}, opt)
}

// ClassifyWith is Classify with a retry's limits for the next attempt.
func ClassifyWith(stateDir, runID, step, action, reason string, lim exec.Limits, opt state.Options) error {
	if _, err := state.ReadMeta(stateDir, runID); err != nil {
		return StoreError(err, runID, stateDir)
	}
	// A sub-plan step waits on its child run: name the child's steps to decide on.
	if v, err := View(stateDir, runID); err == nil {
		for _, st := range v.Steps {
			if st.ID != step || !exec.WaitsOnChild(st) {
				continue
			}
			var ids []string
			if cv, err := View(stateDir, st.ChildRunID); err == nil {
				for _, c := range cv.Steps {
					if c.Status == exec.StatusPendingFailed {
						ids = append(ids, c.ID)
					}
				}
			}
			return usage(fmt.Errorf("step %q waits on its child run %s, whose pending steps are: %s; classify those (faber classify %s STEP ...), then resume %s",
				step, st.ChildRunID, strings.Join(ids, ", "), st.ChildRunID, runID))
		}
	}
	runDir := state.RunDir(stateDir, runID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep, ok, err := control.Send(runDir, control.Msg{Op: "classify", Step: step, Action: action, Reason: reason, MemoryBytes: lim.MemoryBytes, TimeoutMs: lim.TimeoutMs})
		if err != nil {
			return stateProblem(err)
		}
		if ok {
			if !rep.OK {
				if rep.Usage {
					return usage(errors.New(rep.Error))
				}
				return stateProblem(errors.New(rep.Error))
			}
			return nil
		}
		store, err := state.Open(stateDir, runID, opt)
		if err != nil {
			var le *state.LockedError
			if errors.As(err, &le) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond) // the owner is starting or ending
				continue
			}
			if errors.As(err, &le) {
				return stateProblem(fmt.Errorf("run %s is active in process %d and did not answer", runID, le.PID))
			}
			return StoreError(err, runID, stateDir)
		}
		defer store.Close()
		control.Forget(store.Dir()) // a dead owner's; this process holds the lock
		snap, prior, plan, err := LoadOwned(store, runID, stateDir)
		if err != nil {
			return err
		}
		changed, evs, err := exec.ClassifyWith(plan, prior.Steps, step, action, reason, lim)
		if err != nil {
			return usage(err)
		}
		exec.Stamp(evs, snap.LastSeq, runID, time.Now())
		if err := (Recorder{store}).Commit(nil, changed, evs); err != nil {
			return stateProblem(err)
		}
		return nil
	}
}

// Reset puts steps of a run that is not active back to pending (SPEC §10):
// failedOnly, the steps named (with their downstream), or every step. It
// returns the steps it reset; none is not an error.
func Reset(stateDir, runID string, failedOnly bool, steps []string, opt state.Options) ([]*exec.StepState, error) {
	store, err := Open(stateDir, runID, opt)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	snap, prior, plan, err := LoadOwned(store, runID, stateDir)
	if err != nil {
		return nil, err
	}
	changed, evs, err := exec.ResetSteps(plan, prior, failedOnly, steps)
	if err != nil {
		return nil, usage(err)
	}
	if len(changed) == 0 {
		return nil, nil
	}
	if prior.Run.Status == exec.RunSuccess {
		prior.Run.Status = exec.RunFailed // a run with pending steps has not succeeded
	}
	exec.Stamp(evs, snap.LastSeq, runID, time.Now())
	if err := (Recorder{store}).Commit(prior.Run, changed, evs); err != nil {
		return nil, stateProblem(err)
	}
	return changed, nil
}
