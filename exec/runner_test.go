package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faber-run/faber/spec"
)

// fakeStore keeps every committed event and the latest record of each step;
// with failAt > 0, the failAt-th commit fails (and every one after it).
type fakeStore struct {
	mu      sync.Mutex
	commits int
	// groups counts the commits that only record a running attempt's
	// process group (no event): they come for an attempt that outlives
	// groupRecordDelay, which a 'true' does on a loaded machine.
	groups int
	failAt int
	events []Event
	steps  map[string]StepState
	run    *RunState
}

var errDiskFull = errors.New("no space left on device")

func (f *fakeStore) Commit(run *RunState, steps []*StepState, events []Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits++
	if len(events) == 0 && len(steps) > 0 && run == nil {
		group := true
		for _, st := range steps {
			group = group && st.Status == StatusInProgress && st.PGID != 0
		}
		if group {
			f.groups++
		}
	}
	if f.failAt > 0 && f.commits >= f.failAt {
		return errDiskFull
	}
	if run != nil {
		cp := *run
		f.run = &cp
	}
	if f.steps == nil {
		f.steps = map[string]StepState{}
	}
	for _, st := range steps {
		f.steps[st.ID] = *st
	}
	f.events = append(f.events, events...)
	return nil
}

// types is the sequence of event types, with the step for step events.
func (f *fakeStore) types() []string {
	var out []string
	for _, e := range f.events {
		s := e.Type
		if e.StepID != "" {
			s += " " + e.StepID
			if e.Status != "" {
				s += " " + e.Status
			}
		}
		out = append(out, s)
	}
	return out
}

// runPlan runs plan text in a temporary directory on a fresh fakeStore.
func runPlan(t *testing.T, text string, store *fakeStore) (string, error, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the plans use sh")
	}
	dir := t.TempDir()
	p := writePlan(t, dir, text)
	r := &Runner{Plan: p, RunID: "t-20260101T000000-abcd", RunDir: filepath.Join(dir, "run"), Store: store, Jobs: 1}
	status, err := r.Run(t.Context(), nil)
	return status, err, dir
}

// writePlan writes plan text to dir/plan.yaml and parses it.
func writePlan(t *testing.T, dir, text string) *spec.Plan {
	t.Helper()
	file := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Parse(file, []byte(text), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// index is the position of the first event type s (with step and status as
// types() writes them), or -1.
func index(types []string, s string) int { return slices.Index(types, s) }

func TestRunnerSeqContiguous(t *testing.T) {
	store := &fakeStore{}
	status, err, _ := runPlan(t, "name: t\nsteps:\n  - {id: a, run: 'true'}\n  - {id: b, run: 'exit 3', result_handling: {on_failure: continue}}\n  - {id: c, run: 'true'}\n", store)
	if err != nil || status != RunFailed {
		t.Fatalf("status %s, err %v; want failed", status, err)
	}
	for i, e := range store.events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d (%s) has seq %d", i, e.Type, e.Seq)
		}
	}
	if st := store.steps["c"]; st.Status != StatusSuccess {
		t.Errorf("c after a continue: %s, want success", st.Status)
	}
	if last := store.events[len(store.events)-1]; last.Type != EvWorkflowFailed {
		t.Errorf("last event %s, want %s", last.Type, EvWorkflowFailed)
	}
}

// TestRunnerRetryReservedFirst: SPEC §5 — the retry is reserved (step
// retrying, the step_retry_reserved event) before the recovery script runs,
// the next attempt starts only after it, and max_retries: 2 means at most 3
// attempts.
func TestRunnerRetryReservedFirst(t *testing.T) {
	store := &fakeStore{}
	plan := `name: t
failure_handlers:
  - name: h
    rules: [{exit_codes: [7], max_retries: 2, recovery_script: "echo rec >> recovery.log"}]
steps:
  - {id: s, run: "echo x >> attempts.log; exit 7", failure_handler: h}
`
	status, err, dir := runPlan(t, plan, store)
	if err != nil || status != RunFailed {
		t.Fatalf("status %s, err %v; want failed", status, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "attempts.log"))
	if n := strings.Count(string(b), "x"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	var reserved, recovered, next []int
	for i, e := range store.events {
		switch {
		case e.Type == EvRetryReserved:
			reserved = append(reserved, i)
		case e.Type == EvRecoveryFinished:
			recovered = append(recovered, i)
		case e.Type == EvStepStatus && e.Status == StatusInProgress && e.Attempt > 1:
			next = append(next, i)
		}
	}
	if len(reserved) != 2 || len(recovered) != 2 || len(next) != 2 {
		t.Fatalf("reserved %v, recovered %v, next attempts %v:\n%s", reserved, recovered, next, strings.Join(store.types(), "\n"))
	}
	for k := range 2 {
		if !(reserved[k] < recovered[k] && recovered[k] < next[k]) {
			t.Errorf("retry %d: reserved at %d, recovery at %d, next attempt at %d", k+1, reserved[k], recovered[k], next[k])
		}
	}
	if st := store.steps["s"]; st.Status != StatusFailure || st.Attempt != 3 {
		t.Errorf("s: %s attempt %d, want failure attempt 3", st.Status, st.Attempt)
	}
}

// TestRunnerHandlerFails: a failing on_failure command makes the step and the
// run remediation_failed, and the step's dependents canceled.
func TestRunnerHandlerFails(t *testing.T) {
	store := &fakeStore{}
	plan := `name: t
commands: {/fix: "sh -c 'exit 4'"}
steps:
  - {id: a, run: "exit 1", result_handling: {on_failure: /fix}}
  - {id: b, run: "true"}
`
	status, err, _ := runPlan(t, plan, store)
	if err != nil || status != RunRemediationFailed {
		t.Fatalf("status %s, err %v; want remediation_failed", status, err)
	}
	if st := store.steps["a"]; st.Status != StatusRemediationFailed {
		t.Errorf("a: %s", st.Status)
	}
	if st := store.steps["b"]; st.Status != StatusCanceled {
		t.Errorf("b: %s, want canceled", st.Status)
	}
	if index(store.types(), EvHandlerInvoked+" a") < 0 {
		t.Errorf("no step_handler_invoked:\n%s", strings.Join(store.types(), "\n"))
	}
}

// TestRunnerResultFileFailure: exit 0 with {"status":"failure"} in
// $FABER_RESULT is a failure, and its message is the error.
func TestRunnerResultFileFailure(t *testing.T) {
	store := &fakeStore{}
	status, err, _ := runPlan(t, "name: t\nsteps:\n  - {id: a, run: 'echo \"{\\\"status\\\":\\\"failure\\\",\\\"message\\\":\\\"bad data\\\"}\" > \"$FABER_RESULT\"'}\n", store)
	if err != nil || status != RunFailed {
		t.Fatalf("status %s, err %v; want failed", status, err)
	}
	if st := store.steps["a"]; st.Status != StatusFailure || st.Error != "bad data" {
		t.Errorf("a: %s %q", st.Status, st.Error)
	}
}

// TestRunnerPendingFailed: with use_pending_failed, an unanticipated failure
// waits; its dependent stays pending; an independent branch goes on.
func TestRunnerPendingFailed(t *testing.T) {
	store := &fakeStore{}
	plan := `name: t
use_pending_failed: true
steps:
  - {id: a, run: "exit 2"}
  - {id: b, needs: [a], run: "true"}
  - {id: c, needs: [], run: "true"}
`
	status, err, _ := runPlan(t, plan, store)
	if err != nil || status != RunPendingFailed {
		t.Fatalf("status %s, err %v; want pending_failed", status, err)
	}
	want := map[string]string{"a": StatusPendingFailed, "b": StatusPending, "c": StatusSuccess}
	for id, w := range want {
		if got := store.steps[id].Status; got != w && !(w == StatusPending && got == "") {
			t.Errorf("%s: %s, want %s", id, got, w)
		}
	}
}

// TestRunnerCommitFailureStops: a commit that fails is never taken as
// done — the runner returns the error and starts nothing that would depend
// on it (SPEC §8: written before the next action that depends on it).
func TestRunnerCommitFailureStops(t *testing.T) {
	for failAt := 1; failAt <= 3; failAt++ {
		store := &fakeStore{failAt: failAt}
		_, err, dir := runPlan(t, "name: t\nsteps:\n  - {id: a, run: 'touch a.ran'}\n  - {id: b, run: 'touch b.ran'}\n", store)
		if !errors.Is(err, errDiskFull) {
			t.Errorf("commit %d fails: Run returned %v, want the store's error", failAt, err)
		}
		// b's start is committed with a's success (commit 3: run, a
		// started, a done + b started): b must not run when it failed.
		if _, err := os.Stat(filepath.Join(dir, "b.ran")); err == nil {
			t.Errorf("commit %d fails: b ran anyway", failAt)
		}
		if failAt <= 2 {
			if _, err := os.Stat(filepath.Join(dir, "a.ran")); err == nil {
				t.Errorf("commit %d fails: a ran though its start was not committed", failAt)
			}
		}
	}
}

// TestRunnerChainBatchesCommits: on a chain, a step's success is stored in
// the same commit as the start of the step after it (one commit per step,
// not two), and still before that step starts.
func TestRunnerChainBatchesCommits(t *testing.T) {
	store := &fakeStore{}
	plan := "name: t\nsteps:\n"
	for i := range 6 {
		plan += fmt.Sprintf("  - {id: s%d, run: 'true'}\n", i)
	}
	status, err, _ := runPlan(t, plan, store)
	if err != nil || status != RunSuccess {
		t.Fatalf("status %s, err %v", status, err)
	}
	// run started; s0 started; 5 × (success + next started); s5's success; the end.
	if n := store.commits - store.groups; n > 9 {
		t.Errorf("%d commits for a chain of 6 steps (and %d of process groups); want at most 9", n, store.groups)
	}
	// In the log, each success comes before the next step's start.
	done := map[string]bool{}
	for _, e := range store.events {
		if e.Type != EvStepStatus {
			continue
		}
		var n int
		fmt.Sscanf(e.StepID, "s%d", &n)
		switch e.Status {
		case StatusSuccess:
			done[e.StepID] = true
		case StatusInProgress:
			if n > 0 && !done[fmt.Sprintf("s%d", n-1)] {
				t.Errorf("%s started before s%d's success was stored", e.StepID, n-1)
			}
		}
	}
}

// slowStore is a fakeStore whose commit of a step's start takes a while, and
// which looks, before it returns, whether that step's process has run.
type slowStore struct {
	fakeStore
	dir   string
	early []string // steps whose process ran before their start was stored
}

func (s *slowStore) Commit(run *RunState, steps []*StepState, events []Event) error {
	// Only the commit that carries a step's start (its in_progress status
	// event) counts: a step that runs longer than groupRecordDelay (a
	// touch, on a loaded machine) is committed again, in_progress, with its
	// process group, after it started.
	starts := map[string]bool{}
	for _, e := range events {
		if e.Type == EvStepStatus && e.Status == StatusInProgress {
			starts[e.StepID] = true
		}
	}
	for _, st := range steps {
		if starts[st.ID] {
			time.Sleep(200 * time.Millisecond)
			if _, err := os.Stat(filepath.Join(s.dir, st.ID+".ran")); err == nil {
				s.early = append(s.early, st.ID)
			}
		}
	}
	return s.fakeStore.Commit(run, steps, events)
}

// TestRunnerStartWaitsForCommit: an attempt's log files may be made while its
// start is committed, but its process starts only after the commit returns
// (SPEC §8: state is stored before the action that depends on it).
func TestRunnerStartWaitsForCommit(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the plan uses sh")
	}
	dir := t.TempDir()
	store := &slowStore{dir: dir}
	p := writePlan(t, dir, "name: t\nsteps:\n  - {id: a, run: 'touch a.ran'}\n  - {id: b, run: 'touch b.ran'}\n")
	r := &Runner{Plan: p, RunID: "t-20260101T000000-abcd", RunDir: filepath.Join(dir, "run"), Store: store, Jobs: 1}
	if status, err := r.Run(t.Context(), nil); err != nil || status != RunSuccess {
		t.Fatalf("status %s, err %v", status, err)
	}
	if len(store.early) > 0 {
		t.Fatalf("steps %v ran before their start was committed", store.early)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(dir, id+".ran")); err != nil {
			t.Fatalf("%s did not run: %v", id, err)
		}
	}
}

// A step whose log files are being made ahead (makeLogsAhead) starts once
// they are made, and takes them: it does not make its own meanwhile, which
// would leave the hidden files behind in its log directory. Here the files
// are made slowly, after the step before (a no-op) has ended.
func TestRunnerStartWaitsForFilesAhead(t *testing.T) {
	if !aheadFiles {
		t.Skip("log files are made ahead only on Linux")
	}
	slowAhead = func() { time.Sleep(20 * time.Millisecond) }
	defer func() { slowAhead = nil }()
	dir := t.TempDir()
	p := writePlan(t, dir, "name: t\nsteps:\n  - {id: a, run: 'true'}\n  - {id: b, run: 'true', needs: [a]}\n  - {id: c, run: 'echo c says hi', needs: [b]}\n")
	runDir := filepath.Join(dir, "run")
	r := &Runner{Plan: p, RunID: "t-20260101T000000-abcd", RunDir: runDir, Store: &fakeStore{}, Jobs: 1}
	if status, err := r.Run(t.Context(), nil); err != nil || status != RunSuccess {
		t.Fatalf("status %s, err %v", status, err)
	}
	for _, id := range []string{"b", "c"} {
		for _, stream := range []string{"out", "err"} {
			p := LogPath(runDir, id, "attempt", 1, stream)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			if _, err := os.Stat(aheadName(p)); err == nil {
				t.Errorf("%s: the file made ahead is left", aheadName(p))
			}
		}
	}
	if b, err := os.ReadFile(LogPath(runDir, "c", "attempt", 1, "out")); err != nil || string(b) != "c says hi\n" {
		t.Errorf("c's stdout: %q, %v", b, err)
	}
}
