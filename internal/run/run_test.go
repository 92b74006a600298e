package run

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

const planText = "name: p\nuse_pending_failed: true\nsteps:\n  - id: a\n    run: \"true\"\n  - id: b\n    run: \"true\"\n"

// newRun makes a run whose step a waits as pending_failed, b pending after
// it, with a's stderr on disk, and closes its store (no owner).
func newRun(t *testing.T) (stateDir, runID string) {
	t.Helper()
	stateDir, runID = t.TempDir(), "p-20260101T000000-abcd"
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(planFile, []byte(planText), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := state.Create(stateDir, state.Meta{RunID: runID, Plan: "p", PlanFile: planFile}, []byte(planText), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code := 2
	a := &exec.StepState{ID: "a", Name: "a", Phase: "main", Status: exec.StatusPendingFailed, Attempt: 1, ExitCode: &code, Error: "boom", Needs: []string{}}
	b := &exec.StepState{ID: "b", Name: "b", Phase: "main", Status: exec.StatusPending, Needs: []string{"a"}}
	run := &exec.RunState{RunID: runID, Plan: "p", Status: exec.RunPendingFailed, StartedAt: time.Now()}
	evs := []exec.Event{
		{Type: exec.EvRunStarted, Data: &exec.RunStarted{Plan: "p"}},
		{Type: exec.EvStepStatus, StepID: "a", Attempt: 1, Status: exec.StatusPendingFailed, ExitCode: &code, Data: &exec.StepStatus{Error: "boom", Phase: "main"}},
		{Type: exec.EvWorkflowFailed, Status: exec.RunPendingFailed},
	}
	exec.Stamp(evs, 0, runID, time.Now())
	if err := (Recorder{Store: store}).Commit(run, []*exec.StepState{a, b}, evs); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	errPath := exec.LogPath(state.RunDir(stateDir, runID), "a", "attempt", 1, "err")
	os.MkdirAll(filepath.Dir(errPath), 0o700)
	if err := os.WriteFile(errPath, []byte("line 1\nline 2: out of cheese\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return stateDir, runID
}

func TestPendingAndClassify(t *testing.T) {
	dir, id := newRun(t)
	ps, err := Pending(dir, id)
	if err != nil || len(ps) != 1 || ps[0].StepID != "a" || ps[0].Error != "boom" || len(ps[0].StderrTail) != 2 {
		t.Fatalf("Pending = %+v, %v", ps, err)
	}
	var usageErr *UsageError
	if err := Classify(dir, id, "b", "retry", "", state.Options{}); !errors.As(err, &usageErr) {
		t.Errorf("classify of a step that is not pending_failed: %v, want a UsageError", err)
	}
	if err := Classify(dir, id, "a", "retry", "flaky", state.Options{}); err != nil {
		t.Fatalf("Classify: %v", err)
	}
	st, err := StatusOfRun(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	if a := st.Steps[0]; a.ID != "a" || a.Status != exec.StatusPending {
		t.Errorf("a after classify --retry: %+v", a)
	}
}

func TestResetAndNotFound(t *testing.T) {
	dir, id := newRun(t)
	changed, err := Reset(dir, id, true, nil, state.Options{})
	if err != nil || len(changed) == 0 {
		t.Fatalf("Reset --failed-only: %v, %v", changed, err)
	}
	var stateErr *StateError
	if _, err := View(dir, "nope"); !errors.As(err, &stateErr) {
		t.Errorf("a run that is not there: %v, want a StateError", err)
	}
	if _, err := Reset(dir, "nope", false, nil, state.Options{}); !errors.As(err, &stateErr) {
		t.Errorf("reset of a run that is not there: %v, want a StateError", err)
	}
}
