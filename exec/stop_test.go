package exec

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// lateStore is a fakeStore that, while it commits the failure that stops
// the run (the stopper's), waits until the attempt of another step (late)
// has ended and its end is queued for the scheduler. That failure then
// reaches the scheduler after the stop, from a process the stop found
// already gone: the one order a plan cannot force, made certain here.
type lateStore struct {
	fakeStore
	r       *Runner
	dir     string
	stopper string
	late    string
	held    bool
	err     error
}

func (s *lateStore) Commit(run *RunState, steps []*StepState, events []Event) error {
	for _, e := range events {
		if s.held || e.Type != EvStepStatus || e.StepID != s.stopper || e.Status != StatusFailure {
			continue
		}
		s.held = true
		if err := os.WriteFile(filepath.Join(s.dir, "stopping"), nil, 0o644); err != nil {
			s.err = err
			break
		}
		// The loop is here, in this commit: nothing reads r.msgs but us.
		var seen []msg
		deadline := time.After(20 * time.Second)
		for found := false; !found && s.err == nil; {
			select {
			case m := <-s.r.msgs:
				seen = append(seen, m)
				found = m.kind == mAttemptDone && m.sr.def.ID == s.late
			case <-deadline:
				s.err = errors.New(s.late + " did not end")
			}
		}
		for _, m := range seen {
			s.r.msgs <- m
		}
	}
	return s.fakeStore.Commit(run, steps, events)
}

// TestRunnerCancelStopStartsNothingLate: under stop_mode: cancel, a failure
// that reaches the scheduler after the stop (its process ended on its own
// just before) starts nothing: no recovery script, no handler, no new
// attempt. The step is canceled, as it would have been had its failure come
// first (its retry or handler would then have been canceled by the stop),
// and a warning event says what did not run.
func TestRunnerCancelStopStartsNothingLate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the plans use sh")
	}
	late := `echo x >> attempts.log; while [ ! -e stopping ]; do sleep 0.01; done; exit 1`
	for _, tc := range []struct {
		name, handling string
	}{
		{"rule", "failure_handler: h"},
		{"handler", "result_handling: {on_failure: /fix}"},
		{"retry", "result_handling: {on_failure: retry}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := `name: t
stop_mode: cancel
commands: {/fix: ./fix.sh}
failure_handlers:
  - name: h
    rules: [{match_all_exit_codes: true, max_retries: 2, recovery_script: touch rec.ran}]
steps:
  - {id: late, needs: [], run: '` + late + `', ` + tc.handling + `}
  - {id: bad, needs: [], run: 'while [ ! -e attempts.log ]; do sleep 0.01; done; exit 2'}
`
			if err := os.WriteFile(filepath.Join(dir, "fix.sh"), []byte("#!/bin/sh\ntouch handler.ran\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			store := &lateStore{dir: dir, stopper: "bad", late: "late"}
			r := &Runner{Plan: writePlan(t, dir, plan), RunID: "t-20260101T000000-abcd", RunDir: filepath.Join(dir, "run"), Store: store, Jobs: 4}
			store.r = r
			status, err := r.Run(t.Context(), nil)
			if store.err != nil {
				t.Fatal(store.err)
			}
			if err != nil || status != RunFailed {
				t.Fatalf("status %s, err %v; want failed (late: %s)", status, err, store.steps["late"].Error)
			}
			for _, f := range []string{"rec.ran", "handler.ran"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s: ran after the stop", f)
				}
			}
			b, _ := os.ReadFile(filepath.Join(dir, "attempts.log"))
			if n := strings.Count(string(b), "x"); n != 1 {
				t.Errorf("late: %d attempts, want 1", n)
			}
			if st := store.steps["late"]; st.Status != StatusCanceled || st.Attempt != 1 {
				t.Errorf("late: %s attempt %d, want canceled attempt 1", st.Status, st.Attempt)
			}
			warned := false
			for _, e := range store.events {
				switch {
				case e.Type == EvRetryReserved || e.Type == EvHandlerInvoked:
					t.Errorf("%s after the stop", e.Type)
				case e.Type == EvWarning && e.StepID == "late":
					warned = true
				}
			}
			if !warned {
				t.Errorf("no warning for late:\n%s", strings.Join(store.types(), "\n"))
			}
		})
	}
}
