package exec

import (
	"fmt"
	"time"
)

// Recording: every transition is committed, with its event, before the
// action that depends on it (SPEC §8). Sequence numbers are assigned here only.

// statusEvent is the step_status event for the step's current record. It
// carries what a reader needs to rebuild `faber status` from the log alone.
func (r *Runner) statusEvent(sr *stepRun) Event {
	st := sr.st
	ev := Event{Type: EvStepStatus, StepID: st.ID, Attempt: st.Attempt, Status: st.Status,
		Data: statusPayload(st, st.Status != StatusInProgress)}
	if sr.ended != nil {
		// The first event after an attempt's end carries what it used.
		ev.Data.(*StepStatus).AttemptEnd = sr.ended
		sr.ended = nil
	}
	if st.ExitCode != nil && st.Status != StatusInProgress {
		ev.ExitCode = intp(*st.ExitCode)
	}
	if st.Status == StatusInProgress {
		// An attempt's start says what the step reserved with its slot.
		ev.Data.(*StepStatus).Reserved = r.reserved(sr)
	}
	return ev
}

// statusPayload is the step_status payload of a step record; withEnd adds
// the attempt's end (finished_at, duration_ms) when it has one.
func statusPayload(st *StepState, withEnd bool) *StepStatus {
	d := &StepStatus{Phase: st.Phase, Error: st.Error, ChildRunID: st.ChildRunID}
	if st.Spent != nil {
		sp := *st.Spent // a held event (commitLater) is marshaled later
		d.Spent = &sp
	}
	if Status(st.Status).Succeeded() {
		d.CacheKey = st.CacheKey
		d.Outputs = st.Outputs
	}
	if st.StartedAt != nil {
		d.StartedAt = timep(st.StartedAt.UTC())
	}
	if st.FinishedAt != nil && withEnd {
		d.FinishedAt = timep(st.FinishedAt.UTC())
		ms := st.DurationMs
		d.DurationMs = &ms
	}
	return d
}

func (r *Runner) commit(steps []*StepState, evs ...Event) {
	r.commitWith(nil, steps, evs)
}

func (r *Runner) commitRun(steps []*StepState, evs ...Event) {
	r.commitWith(r.run, steps, evs)
}

// commitLater holds a transition that nothing has acted on yet (a step's
// success) for the next commit, so that on a chain the success of one step
// and the start of the next are one transaction. The loop flushes it
// before it waits (flushLater), so it is never held while nothing else
// happens; no process starts and no dependent is told before it is stored.
//
// An item's join is told at once, not at that commit: a join runs no
// process, and deciding it before the next job slot is filled keeps ready
// steps starting in plan order (its dependents before a later independent
// step). Its own commit carries the item's held success first.
func (r *Runner) commitLater(steps []*StepState, evs ...Event) {
	r.later.steps = append(r.later.steps, steps...)
	r.later.evs = append(r.later.evs, evs...)
	for _, st := range steps {
		if sr := r.byID[st.ID]; sr != nil && sr.group != nil {
			r.itemChanged(sr)
		}
	}
}

// flushLater commits what commitLater holds; it reports whether there was
// anything.
func (r *Runner) flushLater() bool {
	if len(r.later.steps) == 0 && len(r.later.evs) == 0 {
		return false
	}
	r.commitWith(nil, nil, nil)
	return true
}

func (r *Runner) commitWith(run *RunState, steps []*StepState, evs []Event) {
	if r.fatal != nil {
		return
	}
	if len(r.later.steps) > 0 || len(r.later.evs) > 0 {
		steps = append(r.later.steps, steps...)
		evs = append(r.later.evs, evs...)
		r.later.steps, r.later.evs = nil, nil
	}
	// Notifications that failed since the last commit are recorded with
	// this one.
	evs = append(evs, r.notes.take()...)
	r.seq = Stamp(evs, r.seq, r.RunID, r.now())
	for i := range evs {
		r.mask.Event(&evs[i]) // secrets never reach the record or a renderer
	}
	var err error
	for i := range evs {
		if evs[i].JSON, evs[i].jsonWellFormed, err = evs[i].marshal(); err != nil {
			err = fmt.Errorf("event %s: %w", evs[i].Type, err)
			break
		}
	}
	if err == nil {
		err = r.Store.Commit(run, steps, evs)
	}
	if err != nil {
		r.seq -= int64(len(evs))
		r.fatal = fmt.Errorf("cannot record the run's state: %w", err)
		for _, sr := range r.all() {
			if sr.ctrl != nil {
				sr.ctrl.Stop(reasonInterrupt, true)
			}
		}
		r.intr = true
		r.stopWork()
		return
	}
	for _, st := range steps {
		if sr := r.byID[st.ID]; sr != nil && sr.group != nil {
			r.itemChanged(sr)
		}
	}
	if r.Sink != nil {
		for _, e := range evs {
			r.Sink.Event(e)
		}
	}
	r.notify(evs)
}

// Stamp numbers events for a commit that follows the event with seq after:
// seq after+1, after+2, ... (SPEC §1: from 1 within a run, across resumes),
// with their time and run id. It returns the last seq given. This is the one
// place events get their numbers, whether the runner or a command (classify,
// reset) commits them.
func Stamp(evs []Event, after int64, runID string, now time.Time) int64 {
	for i := range evs {
		after++
		evs[i].Seq = after
		evs[i].Time = now
		evs[i].RunID = runID
		evs[i].JSON, evs[i].jsonWellFormed = nil, false
	}
	return after
}
