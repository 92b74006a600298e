package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/internal/tmuxtest"
	"github.com/faber-run/faber/state"
)

// TestDetachTmux runs the real binary in tmux, where faber run's live view
// shows a run that a background owner runs: q gives the prompt back while
// a step still sleeps and the run ends success in the store with the step's
// output whole (the owner's own log in owner.log, 0600); the run survives
// its terminal closing; Ctrl-C in the view
// stops the run (exit 130, interrupted, the owner gone); a failing run
// watched to its end exits 1 with the resume hint once; with
// FABER_NO_DETACH the run stays in the foreground process as before; a plan
// error is printed as before, exit 2, with no run created.
func TestDetachTmux(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "detach", ".")
	runID := regexp.MustCompile(`\w+-\d{8}T\d{6}-[0-9a-f]{4}`)
	setup := func(t *testing.T, name, plan string) (work, stateDir string) {
		tm.SetT(t)
		return tmuxtest.PlanDir(t, dir, name, plan)
	}

	t.Run("q", func(t *testing.T) {
		work, stateDir := setup(t, "q", `name: nap
steps:
  - id: nap
    run: sh -c 'echo before; while [ ! -f go ]; do sleep 0.1; done; echo after'
`)
		tm.Start("q", work, bin+" run plan.yaml --state-dir "+stateDir+"; echo prompt-is-back", 120, 40)
		screen := tm.WaitFor("q", 15*time.Second, "the live view with the step's line", func(s string) bool {
			return strings.Contains(s, "│ before")
		})
		id := runID.FindString(screen)
		tm.Keys("q", "q")
		if code := tm.WaitExit("q", work, 10*time.Second); code != "0" {
			t.Fatalf("faber run exited %s after q, want 0:\n%s", code, tm.Capture("q"))
		}
		s := tm.WaitFor("q", 5*time.Second, "the prompt back", func(s string) bool { return strings.Contains(s, "prompt-is-back") })
		for _, want := range []string{"faber: left the live view; run " + id + " goes on in the background (pid ",
			"  back to it:  faber attach " + id, "  stop it:     faber stop " + id} {
			if !strings.Contains(s, want) {
				t.Errorf("after q the terminal lacks %q:\n%s", want, s)
			}
		}
		if o, err := state.OwnerOf(stateDir, id); err != nil || !o.Alive {
			t.Fatalf("after q the run's owner is gone (%+v, %v); it should go on", o, err)
		}
		if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitOwnerGone(t, stateDir, id)
		if v, err := run.View(stateDir, id); err != nil || v.Run.Status != exec.RunSuccess {
			t.Fatalf("the run after q: %+v, %v; want success", v, err)
		}
		out, err := os.ReadFile(filepath.Join(state.RunDir(stateDir, id), "logs", "nap", "attempt-1.out"))
		if err != nil || string(out) != "before\nafter\n" {
			t.Errorf("the step's log: %q, %v; want before and after", out, err)
		}
		logFile := filepath.Join(state.RunDir(stateDir, id), ownerLogName)
		fi, err := os.Stat(logFile)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("owner.log: %v, %v; want a file of mode 0600", fi, err)
		}
		if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), "nap") {
			t.Errorf("owner.log does not tell the run's progress:\n%s", b)
		}
	})

	t.Run("hangup", func(t *testing.T) {
		work, stateDir := setup(t, "hup", `name: hup
steps:
  - id: nap
    run: sh -c 'echo before; while [ ! -f go ]; do sleep 0.1; done; echo after'
`)
		tm.Start("hup", work, bin+" run plan.yaml --ui tui --state-dir "+stateDir, 120, 40)
		screen := tm.WaitFor("hup", 15*time.Second, "the step's line", func(s string) bool { return strings.Contains(s, "│ before") })
		id := runID.FindString(screen)
		tm.Cmd("kill-session", "-t", "hup") // the terminal closes: SIGHUP
		time.Sleep(300 * time.Millisecond)
		if o, err := state.OwnerOf(stateDir, id); err != nil || !o.Alive {
			t.Fatalf("the run's owner did not survive its terminal (%+v, %v)", o, err)
		}
		if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitOwnerGone(t, stateDir, id)
		if v, err := run.View(stateDir, id); err != nil || v.Run.Status != exec.RunSuccess {
			t.Fatalf("the run after its terminal closed: %+v, %v; want success", v, err)
		}
	})

	t.Run("ctrl-c", func(t *testing.T) {
		work, stateDir := setup(t, "intr", `name: intr
steps:
  - id: nap
    run: echo napping; sleep 120.5
`)
		tm.Start("intr", work, bin+" run plan.yaml --ui tui --state-dir "+stateDir, 120, 40)
		screen := tm.WaitFor("intr", 15*time.Second, "the step's line", func(s string) bool { return strings.Contains(s, "│ napping") })
		id := runID.FindString(screen)
		tm.Keys("intr", "C-c")
		if code := tm.WaitExit("intr", work, 10*time.Second); code != "130" {
			t.Errorf("exit code %s, want 130:\n%s", code, tm.Capture("intr"))
		}
		if v, err := run.View(stateDir, id); err != nil || v.Run.Status != exec.RunInterrupted {
			t.Errorf("the run after Ctrl-C: %+v, %v; want interrupted", v, err)
		}
		if o, err := state.OwnerOf(stateDir, id); err == nil && o.Alive {
			t.Errorf("the run's owner still runs after the run ended: %+v", o)
		}
	})

	t.Run("failed", func(t *testing.T) {
		work, stateDir := setup(t, "failed", `name: fails
steps:
  - id: boom
    run: echo doomed; sleep 0.5; exit 4
`)
		tm.Start("failed", work, bin+" run plan.yaml --ui tui --state-dir "+stateDir, 120, 40)
		if code := tm.WaitExit("failed", work, 15*time.Second); code != "1" {
			t.Errorf("exit code %s, want 1", code)
		}
		s := tm.Capture("failed")
		if n := strings.Count(s, "resume with: faber resume "); n != 1 {
			t.Errorf("the resume hint is shown %d times, want once:\n%s", n, s)
		}
		if !strings.Contains(s, "boom") || !strings.Contains(s, "failed steps:") {
			t.Errorf("the summary lacks the failed step:\n%s", s)
		}
	})

	t.Run("in-process", func(t *testing.T) {
		// FABER_NO_DETACH (as where the background faber cannot start):
		// the run stays in the foreground process, q keeps the terminal.
		work, stateDir := setup(t, "inproc", `name: inproc
steps:
  - id: nap
    run: sh -c 'echo before; while [ ! -f go ]; do sleep 0.1; done'
`)
		tm.Start("inproc", work, "FABER_NO_DETACH=1 "+bin+" run plan.yaml --ui tui --state-dir "+stateDir, 120, 40)
		tm.WaitFor("inproc", 15*time.Second, "the step's line", func(s string) bool { return strings.Contains(s, "│ before") })
		tm.Keys("inproc", "q")
		tm.WaitFor("inproc", 10*time.Second, "the old hint", func(s string) bool { return strings.Contains(s, "goes on here (pid ") })
		if _, err := os.Stat(filepath.Join(work, "inproc.exit")); err == nil {
			t.Fatalf("faber run exited after q in-process:\n%s", tm.Capture("inproc"))
		}
		if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := tm.WaitExit("inproc", work, 15*time.Second); code != "0" {
			t.Errorf("exit code %s, want 0", code)
		}
	})

	t.Run("plan error", func(t *testing.T) {
		work, stateDir := setup(t, "bad", "name: bad\nsteps:\n  - id: a\n    run: echo hi\n    needs: [nope]\n")
		tm.Start("bad", work, bin+" run plan.yaml --state-dir "+stateDir, 120, 40)
		if code := tm.WaitExit("bad", work, 15*time.Second); code != "2" {
			t.Errorf("exit code %s, want 2", code)
		}
		s := tm.Capture("bad")
		if n := strings.Count(s, "faber: plan.yaml:"); n != 1 {
			t.Errorf("the plan error is shown %d times, want once:\n%s", n, s)
		}
		if ents, _ := os.ReadDir(filepath.Join(stateDir, "runs")); len(ents) > 0 {
			t.Errorf("a plan error created a run: %v", ents)
		}
	})
}

// waitOwnerGone waits for the run's owner to end (at most 15 s).
func waitOwnerGone(t *testing.T, stateDir, id string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if o, err := state.OwnerOf(stateDir, id); err == nil && !o.Alive {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the owner of run %s did not end within 15s", id)
}
