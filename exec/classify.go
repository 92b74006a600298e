package exec

import (
	"fmt"

	"github.com/faber-run/faber/internal/lazyre"
	"github.com/faber-run/faber/spec"
)

// ClassifyError is a classification that cannot apply; the CLI exits 2.
type ClassifyError struct{ Msg string }

func (e *ClassifyError) Error() string { return e.Msg }

// Classify applies a decision on a pending_failed step (SPEC §6): retry makes
// it pending again (its next attempt number follows); fail makes it failure
// for good and cancels its pending downstream. It returns the changed records
// and the events (step_classified first) to commit together.
func Classify(p *spec.Plan, steps map[string]*StepState, stepID, action, reason string) ([]*StepState, []Event, error) {
	return ClassifyWith(p, steps, stepID, action, reason, Limits{})
}

// ClassifyWith is Classify with limits for the next attempt of a retry
// (--memory, --timeout; zero keeps the step's): the step record keeps them,
// the step_classified event says them.
func ClassifyWith(p *spec.Plan, steps map[string]*StepState, stepID, action, reason string, lim Limits) ([]*StepState, []Event, error) {
	st := steps[stepID]
	if st == nil || p.Step(stepID) == nil {
		return nil, nil, &ClassifyError{fmt.Sprintf("the run has no step %q", stepID)}
	}
	if st.Status != StatusPendingFailed {
		return nil, nil, &ClassifyError{fmt.Sprintf("step %q is %s, not pending_failed: only pending_failed steps can be classified", stepID, st.Status)}
	}
	if WaitsOnChild(st) {
		// The decision belongs to the child run's own pending steps (SPEC §10).
		return nil, nil, &ClassifyError{fmt.Sprintf("step %q waits on its child run %s: classify that run's pending steps (faber pending %s), then resume", stepID, st.ChildRunID, st.ChildRunID)}
	}
	if action != ClassifiedRetry && action != ClassifiedFail {
		return nil, nil, &ClassifyError{fmt.Sprintf("action %q: want retry or fail", action)}
	}
	if action != ClassifiedRetry && (lim.MemoryBytes > 0 || lim.TimeoutMs > 0) {
		return nil, nil, &ClassifyError{"memory and timeout go with retry only"}
	}
	evs := []Event{{Type: EvStepClassified, StepID: stepID, Attempt: st.Attempt,
		Data: &StepClassified{Action: action, Reason: reason, MemoryBytes: lim.MemoryBytes, TimeoutMs: lim.TimeoutMs}}}
	setLimits(st, lim.MemoryBytes, lim.TimeoutMs)
	changed := []*StepState{st}
	st.Classified = action
	if action == ClassifiedRetry {
		st.Status = StatusPending
		st.BudgetWaived = true // a person decided: it starts once whatever its budget
		evs = append(evs, statusOnly(st, "classified retry"))
		return changed, evs, nil
	}
	st.Status = StatusFailure
	evs = append(evs, statusOnly(st, "classified fail"))
	for _, id := range p.Downstream(stepID) {
		d := steps[id]
		if id == stepID || d == nil || d.Status != StatusPending {
			continue
		}
		d.Status = StatusCanceled
		d.Classified = ClassifiedFailDependent
		d.Error = fmt.Sprintf("upstream step %q was classified as failed", stepID)
		changed = append(changed, d)
		evs = append(evs, statusOnly(d, "upstream classified fail"))
	}
	return changed, evs, nil
}

func statusOnly(st *StepState, reason string) Event {
	// Keep the attempt's times: readers rebuild the step from this event.
	d := statusPayload(st, true)
	d.Reason = reason
	ev := Event{Type: EvStepStatus, StepID: st.ID, Attempt: st.Attempt, Status: st.Status, Data: d}
	if st.ExitCode != nil {
		ev.ExitCode = intp(*st.ExitCode)
	}
	return ev
}

var (
	transientRe = lazyre.New(`(?i)connection refused|connection reset|timed? ?out|temporar(y|ily)|NCCL.*timeout|\bEIO\b|input/output error|preempt|try again|unavailable|too many requests|\b429\b|\b503\b|broken pipe|network is unreachable|no route to host`)
	permanentRe = lazyre.New(`SyntaxError|ModuleNotFoundError|ImportError|TypeError|NameError|AttributeError|(?i)permission denied|(?i)no such file or directory|(?i)command not found|(?i)invalid argument`)
)

// Hint guesses from error text whether a failure looks transient (worth a
// retry) or permanent. It is a hint for a person or an agent, never acted on.
func Hint(text string) string {
	switch {
	case permanentRe().MatchString(text):
		return "looks permanent (" + permanentRe().FindString(text) + "): fix the cause, then classify --fail or reset"
	case transientRe().MatchString(text):
		return "looks transient (" + transientRe().FindString(text) + "): classify --retry is likely to help"
	}
	return ""
}

// WaitsOnChild reports whether a pending_failed step waits on its child
// run's own pending steps (SPEC §10: the child ended pending_failed, exit
// 3), rather than on a decision about its own failure: a sub-plan step whose
// child failed is pending_failed by the parent's use_pending_failed like any
// step, and is classified, and kept by resume, like one.
func WaitsOnChild(st *StepState) bool {
	return st.Status == StatusPendingFailed && st.ChildRunID != "" && st.ExitCode != nil && *st.ExitCode == childPendingExit
}
