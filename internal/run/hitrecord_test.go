package run

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// A cache hit committed through the Recorder is stored as a hit record
// (exec.AppendHitRecord), and LoadRecords gives back the very record a
// full one would read back as, before and after the store is reopened.
func TestHitRecordsLoad(t *testing.T) {
	stateDir, runID := t.TempDir(), "p-20260101T000000-cafe"
	store := newStore(t, stateDir, runID, 0)
	rec, now := Recorder{Store: store}, time.Now()
	hitOf := func(id, key string, seq int64) (*exec.StepState, []exec.Event) {
		return hitFixture(id, "a", key, seq, now)
	}
	h1, e1 := hitOf("a[1]", "k1", 7)
	h2, e2 := hitOf("a[2]", "k2", 8)
	code := 1
	b := &exec.StepState{ID: "b", Name: "b", Phase: "main", Status: exec.StatusFailure, Attempt: 1, ExitCode: &code, Needs: []string{"a"}}
	evs := append([]exec.Event{{Type: exec.EvRunStarted, Data: &exec.RunStarted{Plan: "p"}}}, e1...)
	evs = append(evs, exec.Event{Type: exec.EvStepStatus, StepID: "b", Attempt: 1, Status: exec.StatusFailure, ExitCode: &code, Data: &exec.StepStatus{Phase: "main"}})
	seq := exec.Stamp(evs, 0, runID, now)
	if err := rec.Commit(&exec.RunState{RunID: runID, Plan: "p", StartedAt: now}, []*exec.StepState{h1, b}, evs); err != nil {
		t.Fatal(err)
	}
	exec.Stamp(e2, seq, runID, now)
	if err := rec.Commit(nil, []*exec.StepState{h2}, e2); err != nil {
		t.Fatal(err)
	}
	check := func(store *state.Store) {
		t.Helper()
		snap, err := store.Load()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a[1]", "a[2]"} {
			if _, ok := exec.IsHitRecord(snap.Steps[id]); !ok {
				t.Errorf("step %s: stored %q, not a hit record", id, snap.Steps[id])
			}
		}
		if _, ok := exec.IsHitRecord(snap.Steps["b"]); ok {
			t.Error("a failure got a hit record")
		}
		_, prior, err := LoadRecords(store, runID, stateDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []*exec.StepState{h1, h2, b} {
			want := asStored(t, st)
			if got := prior.Steps[st.ID]; !reflect.DeepEqual(got, want) {
				t.Errorf("step %s loads as\n%+v\nwant\n%+v", st.ID, got, want)
			}
		}
	}
	check(store)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(stateDir, runID, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	check(store)

	// Events that are not the record's own: the store is damaged.
	snap, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	swapped := func(seqs []int64, fn func(int, []byte) error) error {
		var evs [][]byte
		if err := store.EventsAt(seqs, func(_ int, b []byte) error {
			evs = append(evs, append([]byte(nil), b...))
			return nil
		}); err != nil {
			return err
		}
		evs[0], evs[1] = evs[1], evs[0]
		for i, b := range evs {
			if err := fn(i, b); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := DecodePrior(snap, stateDir, swapped); !errors.Is(err, state.ErrDamaged) {
		t.Errorf("events swapped: %v, want a damaged store", err)
	}
	snap.LastSeq = 2
	if _, err := DecodePrior(snap, stateDir, store.EventsAt); !errors.Is(err, state.ErrDamaged) {
		t.Errorf("a hit record past the last event: %v, want a damaged store", err)
	}
}

// newStore creates run runID of a plan of planText for a test or a
// benchmark, for a plan of steps steps (0: not known).
func newStore(tb testing.TB, stateDir, runID string, steps int) *state.Store {
	tb.Helper()
	planFile := filepath.Join(tb.TempDir(), "plan.yaml")
	if err := os.WriteFile(planFile, []byte(planText), 0o600); err != nil {
		tb.Fatal(err)
	}
	store, err := state.Create(stateDir, state.Meta{RunID: runID, Plan: "p", PlanFile: planFile}, []byte(planText), state.Options{Steps: steps})
	if err != nil {
		tb.Fatal(err)
	}
	return store
}

// hitFixture is item id of fan-out fanOut settled as cached at now, with
// the two events a runner commits with it (not yet stamped): the hit
// reuses attempt 1 of another run, its event at seq there.
func hitFixture(id, fanOut, key string, seq int64, now time.Time) (*exec.StepState, []exec.Event) {
	st := &exec.StepState{ID: id, Name: id, Phase: "main", Status: exec.StatusCached, StartedAt: &now, FinishedAt: &now,
		Needs: []string{}, FanOut: fanOut, Hash: "def-" + id, CacheKey: key,
		CachedFrom: &exec.CachedFrom{Attempt: 1, RunID: "p-20251231T000000-0001", Seq: seq}}
	ms := int64(0)
	return st, []exec.Event{
		{Type: exec.EvStepCacheHit, StepID: id, Data: &exec.CacheHit{CachedAttempt: 1, CachedRunID: st.CachedFrom.RunID, CachedSeq: seq, Key: key}},
		{Type: exec.EvStepStatus, StepID: id, Status: exec.StatusCached, Data: &exec.StepStatus{Phase: "main", CacheKey: key,
			StartedAt: new(now.UTC()), FinishedAt: new(now.UTC()), DurationMs: &ms}},
	}
}

// asStored is st as its full JSON record reads back.
func asStored(t *testing.T, st *exec.StepState) *exec.StepState {
	t.Helper()
	b, err := exec.AppendStepJSON(nil, st)
	if err != nil {
		t.Fatal(err)
	}
	var back exec.StepState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}
