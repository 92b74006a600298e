package run

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// display records what a session fed it.
type display struct {
	mu     sync.Mutex
	events []exec.Event
	closed int
}

func (d *display) Event(e exec.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, e)
}

func (d *display) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed++
	return nil
}

func (d *display) types() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ts []string
	for _, e := range d.events {
		ts = append(ts, e.Type)
	}
	return ts
}

// newSession creates a run of the plan text in a fresh state dir and returns
// its session, fed to d, with meta's secrets (a parent's, for a child run).
func newSession(t *testing.T, text string, d *display, secrets ...string) *Session {
	t.Helper()
	stateDir, runID := t.TempDir(), "s-20260101T000000-abcd"
	file := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Parse(file, []byte(text), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	meta := state.Meta{RunID: runID, Plan: plan.Name, PlanFile: file, StartedAt: now, Created: now.UnixNano(), Secrets: secrets}
	store, err := state.Create(stateDir, meta, []byte(text), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return newTestSession(&Session{StateDir: stateDir, RunID: runID, Plan: plan, Store: store}, d)
}

// newTestSession completes s as a command would, feeding d.
func newTestSession(s *Session, d *display) *Session {
	s.Interrupt = func(bool) {}
	s.Show = func(bool) (Display, <-chan struct{}) { return d, nil }
	s.WantOutput = true
	return s
}

func TestSessionRunsAndClosesTheStore(t *testing.T) {
	d := &display{}
	s := newSession(t, "name: s\nsteps:\n  - id: a\n    run: \"true\"\n", d)
	result := filepath.Join(t.TempDir(), "result.json")
	s.ResultFile = result
	var told []bool
	show := s.Show
	s.Show = func(c bool) (Display, <-chan struct{}) {
		told = append(told, c)
		return show(c)
	}
	var grown []int
	s.Grown = func(n int) { grown = append(grown, n) }

	out, err := s.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Status != exec.RunSuccess || len(out.States) != 1 || out.States[0].Status != exec.StatusSuccess {
		t.Fatalf("Run = %+v, want the run and its step a successful", out)
	}
	if len(told) != 1 || !told[0] {
		t.Errorf("Show was told control %v, want [true] once", told)
	}
	if d.closed != 1 {
		t.Errorf("the display was closed %d times, want 1", d.closed)
	}
	if ts := d.types(); len(ts) == 0 || ts[0] != exec.EvRunStarted || ts[len(ts)-1] != exec.EvWorkflowCompleted {
		t.Errorf("the display got %v, want run_started ... workflow_completed", ts)
	}
	if len(grown) != 1 || grown[0] != 1 {
		t.Errorf("Grown was told %v, want [1] (the plan's step) before the run", grown)
	}
	// The store was closed cleanly: its summary is there, its lock free,
	// its control channel's file gone.
	if sum, ok := state.ReadSummary(s.StateDir, s.RunID); !ok || sum.Status != exec.RunSuccess {
		t.Errorf("summary = %+v, %v; want the run's, successful", sum, ok)
	}
	if o, err := state.OwnerOf(s.StateDir, s.RunID); err != nil || o.Alive {
		t.Errorf("owner = %+v, %v; want none alive", o, err)
	}
	for _, f := range control.Files {
		if _, err := os.Stat(filepath.Join(state.RunDir(s.StateDir, s.RunID), f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("control file %s left: %v", f, err)
		}
	}
	if _, err := os.Stat(result); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run that succeeded wrote a result for its parent: %v", err)
	}
}

func TestSessionTellsTheParentWhyTheChildFailed(t *testing.T) {
	d := &display{}
	// hunter2 is a secret the parent handed this child run.
	s := newSession(t, "name: c\nsteps:\n  - id: a\n    run: \"echo hunter2 >&2; exit 3\"\n", d, "hunter2")
	result := filepath.Join(t.TempDir(), "result.json")
	s.ResultFile = result

	out, err := s.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Status != exec.RunFailed {
		t.Fatalf("status %s, want %s", out.Status, exec.RunFailed)
	}
	b, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	// The step's error is its stderr, the parent's secret masked.
	want := "child run " + s.RunID + " failed: step a failure: ***"
	if got["status"] != "failure" || got["message"] != want {
		t.Errorf("result = %v, want status failure and message %q", got, want)
	}
}

func TestResumeSessionRunsWhatIsLeft(t *testing.T) {
	dir, id := newRun(t) // a pending_failed, b pending after it
	s, res, err := ResumeSession(dir, id, state.Options{}, ResumeOptions{RetryPending: true})
	if err != nil {
		t.Fatalf("ResumeSession: %v", err)
	}
	if s.Prior != res.Prior || s.Store != res.Store || s.Plan != res.Plan || s.RunID != id || s.StateDir != dir {
		t.Fatalf("session %+v does not hold what Resume took over", s)
	}
	d := &display{}
	out, err := newTestSession(s, d).Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Status != exec.RunSuccess || len(out.States) != 2 {
		t.Fatalf("Run = %+v, want a and b run again, successful", out)
	}
	for _, st := range out.States {
		if st.Status != exec.StatusSuccess || st.Attempt != map[string]int{"a": 2, "b": 1}[st.ID] {
			t.Errorf("step %s: %s, attempt %d", st.ID, st.Status, st.Attempt)
		}
	}
	// The store is closed: the run can be taken over again.
	if _, _, err := ResumeSession(dir, id, state.Options{}, ResumeOptions{}); err == nil || !strings.Contains(err.Error(), "already succeeded") {
		t.Errorf("a second resume: %v, want the run already succeeded", err)
	}
}

func TestSessionStoppedByItsStore(t *testing.T) {
	d := &display{}
	s := newSession(t, "name: s\nsteps:\n  - id: a\n    run: \"true\"\n", d)
	// A store that cannot be written stops the run as a state problem, as
	// a full state dir does: closed under the runner, its first commit
	// fails.
	if err := s.Store.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Run(context.Background())
	var se *StoppedError
	if !errors.As(err, &se) || se.RunID != s.RunID {
		t.Fatalf("Run on a closed store: %v, want a *StoppedError of run %s", err, s.RunID)
	}
	if d.closed != 1 {
		t.Errorf("the display was closed %d times, want 1", d.closed)
	}
}

// TestSessionTellsTheFirstCacheHit: CacheHit is told once, on the run that
// serves its steps from the cache, and never on the run that fills it.
func TestSessionTellsTheFirstCacheHit(t *testing.T) {
	stateDir, dir := t.TempDir(), t.TempDir()
	text := "name: c\nsteps:\n  - id: t\n    foreach: {range: [1, 3]}\n    inputs: [\"in/{item}.txt\"]\n    run: \"true\"\n"
	file := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, i := range []string{"1", "2", "3"} {
		if err := os.WriteFile(filepath.Join(dir, "in", i+".txt"), []byte(i), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := spec.Parse(file, []byte(text), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(runID string) (hits int, states []*exec.StepState) {
		t.Helper()
		now := time.Now()
		meta := state.Meta{RunID: runID, Plan: plan.Name, PlanFile: file, StartedAt: now, Created: now.UnixNano()}
		store, err := state.Create(stateDir, meta, []byte(text), state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := newTestSession(&Session{StateDir: stateDir, RunID: runID, Plan: plan, Store: store}, &display{})
		s.CacheHit = func() { hits++ }
		out, err := s.Run(context.Background())
		if err != nil || out.Status != exec.RunSuccess {
			t.Fatalf("run %s: %v, %+v", runID, err, out)
		}
		return hits, out.States
	}
	count := func(states []*exec.StepState) (n int) {
		for _, st := range states {
			if st.Status == exec.StatusCached {
				n++
			}
		}
		return n
	}
	if hits, states := run("c-20260101T000000-aaaa"); hits != 0 || count(states) != 0 {
		t.Fatalf("the first run: CacheHit told %d times, %d steps cached; want none", hits, count(states))
	}
	if hits, states := run("c-20260101T000001-bbbb"); hits != 1 || count(states) != 3 {
		t.Fatalf("the second run: CacheHit told %d times, %d steps cached; want once, 3 cached", hits, count(states))
	}
}
