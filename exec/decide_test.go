package exec

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// pfSink reports each step that becomes pending_failed.
type pfSink chan string

func (s pfSink) Event(e Event) {
	if e.Type == EvStepStatus && e.Status == StatusPendingFailed {
		s <- e.StepID
	}
}

const decidePlan = `name: decide
use_pending_failed: true
steps:
  - id: flaky
    run: "[ -f ok ] || exit 5"
  - id: after
    run: touch after-ran
  - id: indep
    needs: []
    run: "true"
`

// decideRunner runs decidePlan with WaitDecisions set (wait) and a control
// channel; it returns the channel to send requests on, the pending_failed
// steps as they come, and the outcome once Run returns.
func decideRunner(t *testing.T, ctx context.Context, wait <-chan struct{}) (dir string, ctl chan ControlReq, pf pfSink, done chan string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the plans use sh")
	}
	dir = t.TempDir()
	p := writePlan(t, dir, decidePlan)
	ctl = make(chan ControlReq)
	pf = make(pfSink, 8)
	done = make(chan string, 1)
	r := &Runner{Plan: p, RunID: "t-20260101T000000-abcd", RunDir: filepath.Join(dir, "run"), Store: &fakeStore{}, Jobs: 2,
		Sink: pf, Control: ctl, WaitDecisions: wait}
	go func() {
		status, err := r.Run(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		done <- status
	}()
	return dir, ctl, pf, done
}

func classifyReq(t *testing.T, ctl chan ControlReq, step, action string) {
	t.Helper()
	req := ControlReq{StepID: step, Action: action, Reason: "test", Reply: make(chan error, 1)}
	select {
	case ctl <- req:
	case <-time.After(10 * time.Second):
		t.Fatal("the session took no request")
	}
	if err := <-req.Reply; err != nil {
		t.Fatalf("classify %s %s: %v", step, action, err)
	}
}

func waitPF(t *testing.T, pf pfSink, step string) {
	t.Helper()
	select {
	case id := <-pf:
		if id != step {
			t.Fatalf("%s became pending_failed, want %s", id, step)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never became pending_failed", step)
	}
}

// ended is the run's status once Run returned, failing the test when it
// has not within d (or, with d < 0, when it has at once: it must wait).
func ended(t *testing.T, done chan string, d time.Duration) string {
	t.Helper()
	if d < 0 {
		select {
		case s := <-done:
			t.Fatalf("the session ended %s instead of waiting for a decision", s)
		case <-time.After(-d):
			return ""
		}
	}
	select {
	case s := <-done:
		return s
	case <-time.After(d):
		t.Fatal("the session did not end")
	}
	return ""
}

// TestWaitDecisionsRetry: with WaitDecisions open, a pending_failed step
// that is all that is left keeps the session open; a retry through Control
// runs it again in the same session and the run succeeds.
func TestWaitDecisionsRetry(t *testing.T) {
	wait := make(chan struct{})
	dir, ctl, pf, done := decideRunner(t, t.Context(), wait)
	waitPF(t, pf, "flaky")
	ended(t, done, -300*time.Millisecond)
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	classifyReq(t, ctl, "flaky", ClassifiedRetry)
	if s := ended(t, done, 10*time.Second); s != RunSuccess {
		t.Fatalf("run %s, want success", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "after-ran")); err != nil {
		t.Error("the step after the retried one did not run")
	}
}

// TestWaitDecisionsFail: a fail decision ends the wait: the dependent is
// canceled and the run fails.
func TestWaitDecisionsFail(t *testing.T) {
	wait := make(chan struct{})
	dir, ctl, pf, done := decideRunner(t, t.Context(), wait)
	waitPF(t, pf, "flaky")
	ended(t, done, -300*time.Millisecond)
	classifyReq(t, ctl, "flaky", ClassifiedFail)
	if s := ended(t, done, 10*time.Second); s != RunFailed {
		t.Fatalf("run %s, want failed", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "after-ran")); err == nil {
		t.Error("the dependent of a failed step ran")
	}
}

// TestWaitDecisionsLeave: closing WaitDecisions leaves the decision for
// later: the run ends pending_failed, as without the option.
func TestWaitDecisionsLeave(t *testing.T) {
	wait := make(chan struct{})
	_, _, pf, done := decideRunner(t, t.Context(), wait)
	waitPF(t, pf, "flaky")
	ended(t, done, -300*time.Millisecond)
	close(wait)
	if s := ended(t, done, 10*time.Second); s != RunPendingFailed {
		t.Fatalf("run %s, want pending_failed", s)
	}
}

// TestWaitDecisionsInterrupt: an interrupt (Ctrl-C, faber stop) ends the
// wait: the run is interrupted.
func TestWaitDecisionsInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, _, pf, done := decideRunner(t, ctx, make(chan struct{}))
	waitPF(t, pf, "flaky")
	ended(t, done, -300*time.Millisecond)
	cancel()
	if s := ended(t, done, 10*time.Second); s != RunInterrupted {
		t.Fatalf("run %s, want interrupted", s)
	}
}

// TestWaitDecisionsOff: without WaitDecisions the session ends at once.
func TestWaitDecisionsOff(t *testing.T) {
	_, _, pf, done := decideRunner(t, t.Context(), nil)
	waitPF(t, pf, "flaky")
	if s := ended(t, done, 10*time.Second); s != RunPendingFailed {
		t.Fatalf("run %s, want pending_failed", s)
	}
}
