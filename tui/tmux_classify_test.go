package tui

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/tmuxtest"
)

// TestTmuxClassifyKeys runs the real binary in tmux: r on a pending_failed
// step of a live run records step_classified (retry) and the running faber
// re-runs it to success (exit 0); x, confirmed by a second x, records it
// failed, its dependent is canceled and the run fails (exit 1).
func TestTmuxClassifyKeys(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "classify", "..")
	const plan = `name: decide
use_pending_failed: true
steps:
  - id: flaky
    needs: []
    run: if [ -f ran-once ]; then echo fine; else touch ran-once; echo "disk quota exceeded" >&2; exit 5; fi
  - id: after
    needs: [flaky]
    run: echo after
  - id: slow
    needs: []
    run: echo waiting; while [ ! -f release ]; do sleep 0.1; done
`
	for _, c := range []struct {
		key, action, code, flaky string
	}{
		{"r", "retry", "0", "success"},
		{"x", "fail", "1", "failure"},
	} {
		t.Run(c.key, func(t *testing.T) {
			tm.SetT(t)
			work := filepath.Join(dir, c.key)
			writeFile(t, filepath.Join(work, "plan.yaml"), plan)
			tm.Start(c.key, work, bin+" run plan.yaml --ui tui", 120, 40)
			tm.WaitFor(c.key, 10*time.Second, "the expected screen", func(s string) bool {
				return strings.Contains(s, "pending_failed") && strings.Contains(s, "│ waiting")
			})
			selectFirst(t, tm, c.key, "flaky")
			tm.Keys(c.key, c.key)
			if c.key == "x" {
				// x asks first; a second x fails the step.
				tm.WaitFor(c.key, 5*time.Second, "the expected screen", func(s string) bool { return strings.Contains(s, "x again to fail flaky") })
				tm.Keys(c.key, "x")
			}
			tm.WaitFor(c.key, 10*time.Second, "the expected screen", func(s string) bool {
				return strings.Contains(s, "flaky classified: "+c.action) || strings.Contains(s, "flaky  ") && !strings.Contains(s, "pending_failed")
			})
			writeFile(t, filepath.Join(work, "release"), "")
			code := tm.WaitExit(c.key, work, 15*time.Second)
			t.Logf("exit %s:\n%s", code, tm.Capture(c.key))
			if code != c.code {
				t.Errorf("exit code %s, want %s", code, c.code)
			}
			ev := osexec.Command(bin, "events", "--last", "--json")
			ev.Dir = work
			out, err := ev.Output()
			if err != nil {
				t.Fatalf("faber events: %v", err)
			}
			if !strings.Contains(string(out), `"type":"step_classified","run_id":`) || !strings.Contains(string(out), `"action":"`+c.action+`"`) {
				t.Errorf("no step_classified %s in the events:\n%s", c.action, out)
			}
			st := osexec.Command(bin, "status", "--last", "--json")
			st.Dir = work
			out, _ = st.Output()
			if !strings.Contains(string(out), `"id": "flaky"`) || !strings.Contains(string(out), `"status": "`+c.flaky+`"`) {
				t.Errorf("flaky is not %s:\n%s", c.flaky, out)
			}
		})
	}
}

// selectFirst presses g (the first step) until the selection mark is on
// step id: a key that arrives while the program starts can meet a
// terminal's answer and be read with it.
func selectFirst(t *testing.T, tm *tmuxtest.Server, name, id string) {
	t.Helper()
	for range 20 {
		tm.Keys(name, "g")
		deadline := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(deadline) {
			for _, l := range strings.Split(tm.Capture(name), "\n") {
				if strings.HasPrefix(l, "›") && strings.Contains(l, " "+id+" ") {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Fatalf("step %s never got selected:\n%s", id, tm.Capture(name))
}

// TestTmuxDecisionKeepsTheViewOpen runs the real binary in tmux on a plan
// whose only failure waits as pending_failed with nothing else left to run:
// the live view stays open and says the run waits for a decision (the step
// selected); r retries it in place and the run goes on to success (exit 0);
// x x fails it (exit 1); q leaves it for later: the run ends pending_failed
// (exit 3) and the summary says classify before resume.
func TestTmuxDecisionKeepsTheViewOpen(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "decide", "..")
	const plan = `name: decide
use_pending_failed: true
steps:
  - id: flaky
    run: if [ -f ran-once ]; then echo fine; else touch ran-once; echo "Connection refused" >&2; exit 7; fi
  - id: after
    run: echo after; touch after-ran
`
	for _, c := range []struct {
		name  string
		keys  []string
		code  string
		flaky string
		after bool
	}{
		{"r", []string{"r"}, "0", "success", true},
		{"xx", []string{"x", "x"}, "1", "failure", false},
		{"q", []string{"q"}, "3", "pending_failed", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm.SetT(t)
			work := filepath.Join(dir, c.name)
			writeFile(t, filepath.Join(work, "plan.yaml"), plan)
			tm.Start(c.name, work, bin+" run plan.yaml --ui tui", 120, 40)
			tm.WaitFor(c.name, 10*time.Second, "the decision prompt", func(s string) bool {
				return strings.Contains(s, "flaky waits for a decision: r retry · x x fail") && strings.Contains(s, "q later")
			})
			// Nothing can run, yet the session waits: still open a while on.
			time.Sleep(700 * time.Millisecond)
			if _, err := os.Stat(filepath.Join(work, c.name+".exit")); err == nil {
				t.Fatalf("faber run ended instead of waiting for a decision:\n%s", tm.Capture(c.name))
			}
			if s := tm.Capture(c.name); !strings.Contains(s, "waits for a decision") {
				t.Fatalf("the live view is gone:\n%s", s)
			}
			for i, k := range c.keys {
				if i > 0 {
					tm.WaitFor(c.name, 5*time.Second, "the confirmation question", func(s string) bool { return strings.Contains(s, "x again to fail flaky") })
				}
				tm.Keys(c.name, k)
			}
			code := tm.WaitExit(c.name, work, 15*time.Second)
			final := tm.Capture(c.name)
			t.Logf("exit %s:\n%s", code, final)
			if code != c.code {
				t.Errorf("exit code %s, want %s", code, c.code)
			}
			st := osexec.Command(bin, "status", "--last", "--json")
			st.Dir = work
			out, _ := st.Output()
			if !strings.Contains(string(out), `"id": "flaky"`) || !strings.Contains(string(out), `"status": "`+c.flaky+`"`) {
				t.Errorf("flaky is not %s:\n%s", c.flaky, out)
			}
			if _, err := os.Stat(filepath.Join(work, "after-ran")); (err == nil) != c.after {
				t.Errorf("after ran: %v, want %v", err == nil, c.after)
			}
			if c.name == "q" {
				ci, ri := strings.Index(final, "classify with: faber classify "), strings.Index(final, "resume with: faber resume ")
				if ci < 0 || ri < 0 || ci > ri {
					t.Errorf("the summary does not say classify (at %d) before resume (at %d)", ci, ri)
				}
			}
		})
	}
}
