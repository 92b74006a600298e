package run

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// Open takes ownership of a run that no other process holds (SPEC §10: only
// the owner opens a run's store).
func Open(stateDir, runID string, opt state.Options) (*state.Store, error) {
	store, err := state.Open(stateDir, runID, opt)
	if err != nil {
		var le *state.LockedError
		if errors.As(err, &le) {
			return nil, stateProblem(fmt.Errorf("run %s is active in process %d; watch it with faber attach %s, or stop it with faber stop %s", runID, le.PID, runID, runID))
		}
		return nil, StoreError(err, runID, stateDir)
	}
	control.Forget(store.Dir()) // a dead owner's; this process holds the lock
	return store, nil
}

// CleanLeftovers removes what dead fabers left in the state dir (README
// "Storage and durability", "Leftovers"): in each run but runID whose
// owner is dead, its control file and temporary files; the cache's
// temporary files whose writer is gone; and the empty cgroups of the
// attempts of those runs. A new session calls it beside its run; it only
// reads directories where there is nothing to clean.
func CleanLeftovers(stateDir, runID string) {
	state.CleanDeadRuns(stateDir, runID, control.Files...)
	state.CleanCacheTemps(stateDir)
	exec.RemoveDeadCgroups(func(id string) bool { return id != runID && state.OwnerDead(stateDir, id) })
}

// LoadOwned loads an owned run's snapshot, its records and its stored plan,
// for what changes a run that is not active (resume, reset, classify).
func LoadOwned(store *state.Store, runID, stateDir string) (*state.Snapshot, *exec.Prior, *spec.Plan, error) {
	snap, prior, err := LoadRecords(store, runID, stateDir)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, err := spec.Parse(snap.Meta.PlanFile, snap.Plan, spec.Options{Sets: snap.Meta.Sets, NoProgramChecks: true})
	if err != nil {
		return nil, nil, nil, stateProblem(fmt.Errorf("run %s: stored plan unreadable: %w", runID, err))
	}
	if plan, err = SelectPart(plan, snap.Meta.Part); err != nil {
		return nil, nil, nil, stateProblem(fmt.Errorf("run %s: part of the stored plan: %w", runID, err))
	}
	exec.ApplyExpansions(plan, prior)
	exec.FillPending(plan, prior)
	return snap, prior, plan, nil
}

// LoadRecords loads an owned run's snapshot and its decoded records.
func LoadRecords(store *state.Store, runID, stateDir string) (*state.Snapshot, *exec.Prior, error) {
	snap, err := store.Load()
	if err != nil {
		if errors.Is(err, state.ErrDamaged) {
			return nil, nil, StoreError(err, runID, stateDir)
		}
		return nil, nil, stateProblem(fmt.Errorf("run %s: cannot load its state: %w", runID, err))
	}
	prior, err := DecodePrior(snap, stateDir, store.EventsAt)
	if err != nil {
		return nil, nil, StoreError(err, runID, stateDir)
	}
	return snap, prior, nil
}

// DecodePrior reads the run and step records of a snapshot, with events
// reading the events that hit records point at (Store.EventsAt). The
// store checksums what it returns, so a record that does not decode, or a
// hit record whose events do not fit it, was written wrong or changed on
// disk: the store is damaged.
func DecodePrior(snap *state.Snapshot, stateDir string, events EventsAt) (*exec.Prior, error) {
	bad := func(what string, err error) error {
		return &state.DamagedError{RunID: snap.Meta.RunID, Path: filepath.Join(state.RunDir(stateDir, snap.Meta.RunID), "db"), Cause: what + " is unreadable", Err: err}
	}
	prior := &exec.Prior{Steps: map[string]*exec.StepState{}, LastSeq: snap.LastSeq, Run: &exec.RunState{}}
	if len(snap.Run) > 0 {
		if err := json.Unmarshal(snap.Run, prior.Run); err != nil {
			return nil, bad("the run record", err)
		}
	} else {
		prior.Run = &exec.RunState{RunID: snap.Meta.RunID, Plan: snap.Meta.Plan, StartedAt: snap.Meta.StartedAt}
	}
	var hits []hitRef
	for id, b := range snap.Steps {
		if seq, ok := exec.IsHitRecord(b); ok {
			hits = append(hits, hitRef{id, seq, b})
			continue
		}
		st := &exec.StepState{}
		if err := json.Unmarshal(b, st); err != nil {
			return nil, bad(fmt.Sprintf("the record of step %q", id), err)
		}
		prior.Steps[id] = st
	}
	if err := decodeHits(prior, hits, snap.LastSeq, events, bad); err != nil {
		return nil, err
	}
	return prior, nil
}

// decodeHits rebuilds the records of hits into prior from the events
// each points at (step_cache_hit at seq-1, step_status at seq), read in
// one pass in seq order; lastSeq is the last event's. bad makes the
// damage error of a record.
func decodeHits(prior *exec.Prior, hits []hitRef, lastSeq int64, events EventsAt, bad func(string, error) error) error {
	if len(hits) == 0 {
		return nil
	}
	slices.SortFunc(hits, func(a, b hitRef) int { return cmp.Compare(a.seq, b.seq) })
	seqs := make([]int64, 0, 2*len(hits))
	for i, h := range hits {
		if h.seq < 2 || h.seq > lastSeq || (i > 0 && h.seq-1 <= hits[i-1].seq) {
			return bad(fmt.Sprintf("the record of step %q", h.id), fmt.Errorf("it points at event %d", h.seq))
		}
		seqs = append(seqs, h.seq-1, h.seq)
	}
	// The events are valid only during each call: the hit event's is
	// kept (in buf) until its step_status event comes.
	var buf []byte
	return events(seqs, func(i int, b []byte) error {
		if i%2 == 0 {
			buf = append(buf[:0], b...)
			return nil
		}
		h := hits[i/2]
		st, err := exec.DecodeHitRecord(h.id, h.rec, buf, b)
		if err != nil {
			return bad(fmt.Sprintf("the record of step %q", h.id), err)
		}
		prior.Steps[h.id] = st
		return nil
	})
}

// EventsAt reads committed events by seq, as state.Store.EventsAt does.
type EventsAt func(seqs []int64, fn func(i int, b []byte) error) error

// hitRef is a hit record found in a snapshot (exec.IsHitRecord).
type hitRef struct {
	id  string
	seq int64
	rec []byte
}

// Recorder gives the runner the store it needs (exec.Store) over package
// state: every change of a run, from a session or a command, is committed
// through it.
type Recorder struct{ Store *state.Store }

// Commit marshals the records and events and commits them in one
// transaction, and keeps the run's view (state.Viewer) current with them.
func (a Recorder) Commit(run *exec.RunState, steps []*exec.StepState, events []exec.Event) error {
	var c state.Change
	if run != nil {
		b, err := json.Marshal(run)
		if err != nil {
			return err
		}
		c.Run = b
	}
	if len(steps) > 0 {
		c.Steps = make(map[string][]byte, len(steps))
		hits := cachedEvents(events)
		for _, st := range steps {
			if i, ok := hits[st.ID]; ok && i > 0 {
				// A cache hit's record is the short one its two events
				// complete, when they carry all of it (exec.AppendHitRecord).
				if b, ok := exec.AppendHitRecord(make([]byte, 0, 128), st, &events[i-1], &events[i]); ok {
					c.Steps[st.ID] = b
					continue
				}
			}
			b, err := exec.AppendStepJSON(make([]byte, 0, 640), st)
			if err != nil {
				return err
			}
			c.Steps[st.ID] = b
		}
	}
	for _, e := range events {
		b, wellFormed, err := e.MarshalChecked()
		if err != nil {
			return err
		}
		c.Events = append(c.Events, state.Event{Seq: e.Seq, JSON: b, WellFormed: wellFormed})
		if o, ok := outcomeOf(e.Type, b); ok {
			c.Outcome = &o
		}
	}
	// The run's view takes in what is committed, and only that: it is
	// made of what was committed before.
	v := viewerOf(a.Store)
	<-v.ready
	if err := a.Store.Commit(c); err != nil {
		return err
	}
	if v.rep != nil {
		v.rep.Committed(events)
	}
	return nil
}

// cachedEvents indexes the step_status events of events that settle a
// step as cached, by step id; nil when there are none.
func cachedEvents(events []exec.Event) map[string]int {
	var m map[string]int
	for i := range events {
		if e := &events[i]; e.Type == exec.EvStepStatus && e.Status == exec.StatusCached {
			if m == nil {
				m = make(map[string]int)
			}
			m[e.StepID] = i
		}
	}
	return m
}

// outcomeOf is the run's status after an event of type typ (JSON b) as
// exec.Replay reckons it, which is what 'faber list' shows; ok is false for
// an event that leaves the status as it was. It reads the status and time
// back from the JSON, as Replay does, so that the store's summary of the run
// says to the nanosecond what a replay would.
func outcomeOf(typ string, b []byte) (state.Outcome, bool) {
	switch typ {
	case exec.EvRunStarted, exec.EvRunResumed:
		return state.Outcome{Status: exec.RunInProgress}, true
	case exec.EvWorkflowCompleted, exec.EvWorkflowFailed:
		var e struct {
			Time   time.Time `json:"time"`
			Status string    `json:"status"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			// Not to be: b was just marshalled. An outcome in progress
			// sends readers to the run itself.
			return state.Outcome{Status: exec.RunInProgress}, true
		}
		if e.Status == "" {
			e.Status = exec.RunFailed
			if typ == exec.EvWorkflowCompleted {
				e.Status = exec.RunSuccess
			}
		}
		return state.Outcome{Status: e.Status, FinishedAt: &e.Time}, true
	}
	return state.Outcome{}, false
}
