package exec

import (
	"context"
)

// The end of a run (SPEC §7): one evaluation, the end step, the final record.

// evaluate computes the run status from the step statuses (SPEC §10) and the
// failed step ids in plan order. The end step is not counted.
func (r *Runner) evaluate() (string, []string) {
	var failed []string
	var remFailed, pendFailed, awaiting, anyFailed bool
	for _, sr := range r.steps {
		s := Status(sr.st.Status)
		if s.Failed() {
			failed = append(failed, sr.def.ID)
		}
		switch {
		case s == StatusRemediationFailed:
			remFailed = true
		case s == StatusPendingFailed:
			pendFailed = true
		case s == StatusAwaitingApproval:
			awaiting = true
		case !s.Satisfies():
			// failure, canceled, interrupted; pending (a step left
			// waiting on a pending_failed one makes the run
			// pending_failed, which takes precedence).
			anyFailed = true
		}
	}
	switch {
	case r.intr:
		return RunInterrupted, failed
	case remFailed:
		return RunRemediationFailed, failed
	case pendFailed:
		return RunPendingFailed, failed
	case awaiting:
		return RunAwaitingApproval, failed
	case anyFailed:
		return RunFailed, failed
	}
	return RunSuccess, failed
}

// runEnd runs the explicit end step as a new attempt (SPEC §7).
func (r *Runner) runEnd(ctx context.Context, status string, failed []string) {
	sr := r.end
	sr.st.Status = StatusPending
	r.stopping = false
	r.endStatus = status
	r.endFailed = failed
	r.push(sr)
	r.loop(ctx)
}

// finish evaluates the run once and writes the end event with the run record.
func (r *Runner) finish() string {
	status, failed := r.evaluate()
	if r.fatal != nil {
		status = RunInterrupted
	}
	if r.end != nil && !r.intr && status == RunSuccess && r.end.st.Status != StatusSuccess {
		status = RunFailed
	}
	if r.end != nil && r.intr && r.end.st.Status == StatusInProgress {
		status = RunInterrupted
	}
	now := r.now()
	r.run.Status = status
	r.run.FinishedAt = &now
	typ := EvWorkflowFailed
	if status == RunSuccess {
		typ = EvWorkflowCompleted
	}
	if failed == nil {
		failed = []string{}
	}
	d := &WorkflowEnded{EvaluatedByEndStep: true, TotalSteps: len(r.steps), FailedStepsCount: len(failed), FailedSteps: failed}
	if r.end != nil {
		d.EndStepStatus = r.end.st.Status
	}
	ev := Event{Type: typ, Status: status, Data: d}
	if r.fatal == nil {
		r.commitRun(nil, ev)
	}
	return status
}
