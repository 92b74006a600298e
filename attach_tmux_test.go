package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/tmuxtest"
	"github.com/faber-run/faber/state"
)

// TestAttachTmux runs the real binary in two tmux terminals: q in the live
// view of `faber run` leaves the view, names `faber attach` and exits 0 (the
// prompt is back) while the run goes on in the background; `faber attach
// --last` in the other terminal shows the running step and the line it
// printed before attach came; when the step ends, the attached view gives
// way to the run's summary, attach exits 0, and the step's log is whole. Watching
// the run once it has ended prints its summary at once.
func TestAttachTmux(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "attach", ".")
	work, stateDir := tmuxtest.PlanDir(t, dir, "work", `name: wait
steps:
  - id: waiter
    run: sh -c 'echo working; while [ ! -f go ]; do sleep 0.1; done'
`)

	tm.Start("owner", work, bin+" run plan.yaml --ui tui --state-dir "+stateDir, 120, 40)
	screen := tm.WaitFor("owner", 15*time.Second, "the live view with the step's line", func(s string) bool {
		return strings.Contains(s, "waiter") && strings.Contains(s, "│ working")
	})
	id := regexp.MustCompile(`wait-\d{8}T\d{6}-[0-9a-f]{4}`).FindString(screen)
	if id == "" {
		t.Fatalf("no run id on the owner's screen:\n%s", screen)
	}
	tm.Keys("owner", "q")
	tm.WaitFor("owner", 10*time.Second, "the hint naming faber attach", func(s string) bool {
		return strings.Contains(s, "goes on in the background") && strings.Contains(s, "faber attach "+id)
	})
	// q gives the prompt back (faber run exits 0) while the step still
	// runs, in the background owner.
	if code := tm.WaitExit("owner", work, 10*time.Second); code != "0" {
		t.Fatalf("faber run exited %s after q, want 0:\n%s", code, tm.Capture("owner"))
	}
	if o, err := state.OwnerOf(stateDir, id); err != nil || !o.Alive {
		t.Fatalf("after q the run's owner is gone (%+v, %v); it should go on", o, err)
	}

	tm.Start("attach", work, bin+" attach --last --state-dir "+stateDir, 120, 40)
	tm.WaitFor("attach", 15*time.Second, "the step in_progress and its line in the log pane", func(s string) bool {
		return strings.Contains(s, id) && strings.Contains(s, "in_progress") && strings.Contains(s, "│ working") &&
			strings.Contains(s, "q/ctrl+c leave")
	})
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	final := tm.WaitFor("attach", 15*time.Second, "the run's summary", func(s string) bool {
		return strings.Contains(s, id+" success in ") && strings.Contains(s, "1 success")
	})
	if code := tm.WaitExit("attach", work, 15*time.Second); code != "0" {
		t.Errorf("faber attach exited %s, want 0 (the run's code):\n%s", code, final)
	}
	waitOwnerGone(t, stateDir, id)
	if out, err := os.ReadFile(filepath.Join(state.RunDir(stateDir, id), "logs", "waiter", "attempt-1.out")); err != nil || string(out) != "working\n" {
		t.Errorf("the step's log after a run left with q: %q, %v; want \"working\\n\"", out, err)
	}

	// A run that has ended: its summary at once, and its code.
	tm.Start("after", work, bin+" watch "+id+" --state-dir "+stateDir, 120, 40)
	if code := tm.WaitExit("after", work, 15*time.Second); code != "0" {
		t.Errorf("faber watch of a finished run exited %s, want 0", code)
	}
	if s := tm.Capture("after"); !strings.Contains(s, id+" success in ") || !strings.Contains(s, "STEP") {
		t.Errorf("faber watch of a finished run does not show its summary:\n%s", s)
	}
}
