package run

import (
	"errors"
	"fmt"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/state"
)

// Decide approves or rejects an approval gate of a run (README "Approval
// gates"): through the run's owner when it is active (the step starts, or
// fails, at once), else recorded in the run's store for the next resume.
// It reports whether the owner applied it.
func Decide(stateDir, runID string, req exec.GateReq, opt state.Options) (live bool, err error) {
	if _, err := state.ReadMeta(stateDir, runID); err != nil {
		return false, StoreError(err, runID, stateDir)
	}
	action := "reject"
	if req.Approve {
		action = "approve"
	}
	runDir := state.RunDir(stateDir, runID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep, ok, err := control.Send(runDir, control.Msg{Op: "approve", Step: req.Step, Action: action, Reason: req.Text, Phase: req.Phase, By: req.By})
		if err != nil {
			return false, stateProblem(err)
		}
		if ok {
			if !rep.OK {
				if rep.Usage {
					return false, usage(errors.New(rep.Error))
				}
				return false, stateProblem(errors.New(rep.Error))
			}
			return true, nil
		}
		store, err := state.Open(stateDir, runID, opt)
		if err != nil {
			var le *state.LockedError
			if errors.As(err, &le) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond) // the owner is starting or ending
				continue
			}
			if errors.As(err, &le) {
				return false, stateProblem(fmt.Errorf("run %s is active in process %d and did not answer", runID, le.PID))
			}
			return false, StoreError(err, runID, stateDir)
		}
		defer store.Close()
		control.Forget(store.Dir()) // a dead owner's; this process holds the lock
		snap, prior, plan, err := LoadOwned(store, runID, stateDir)
		if err != nil {
			return false, err
		}
		changed, evs, err := exec.DecideRecorded(plan, prior.Steps, req)
		if err != nil {
			return false, usage(err)
		}
		exec.Stamp(evs, snap.LastSeq, runID, time.Now())
		if err := (Recorder{store}).Commit(nil, changed, evs); err != nil {
			return false, stateProblem(err)
		}
		return false, nil
	}
}
