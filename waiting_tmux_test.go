package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/tmuxtest"
)

// TestWaitingTmux runs the real binary in tmux with a capacity of one CPU:
// while hold runs, next waits, and the live view of faber run (and of
// faber attach) says why on next's row and shows the capacity and what is
// in use in its header; once hold ends, next runs and the run succeeds.
func TestWaitingTmux(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "waiting", ".")
	work, stateDir := tmuxtest.PlanDir(t, dir, "work", `name: waits
jobs: 4
resources: {cpus: 1}
steps:
  - id: hold
    needs: []
    cpus: 1
    run: sh -c 'echo holding; while [ ! -f go ]; do sleep 0.1; done'
  - id: next
    needs: []
    cpus: 1
    run: echo next ran
`)
	waits := func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "next") && strings.Contains(l, "pending") && strings.Contains(l, "waiting: 1 CPU, 0 free") {
				return strings.Contains(s, "capacity: 1 CPU, ") && strings.Contains(s, "in use: 1 CPU, no memory")
			}
		}
		return false
	}
	tm.Start("owner", work, bin+" run plan.yaml --ui tui --state-dir "+stateDir, 120, 40)
	tm.WaitFor("owner", 15*time.Second, "next waiting for a CPU, and the capacity line", waits)
	tm.Start("attach", work, bin+" attach --last --state-dir "+stateDir, 120, 40)
	tm.WaitFor("attach", 15*time.Second, "the same in faber attach", waits)
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	final := tm.WaitFor("owner", 15*time.Second, "the run's summary", func(s string) bool {
		return strings.Contains(s, "2 success")
	})
	if strings.Contains(final, "waiting:") || strings.Contains(final, "capacity:") {
		t.Errorf("the summary of an ended run shows usage:\n%s", final)
	}
	if code := tm.WaitExit("owner", work, 15*time.Second); code != "0" {
		t.Errorf("faber run exited %s, want 0:\n%s", code, final)
	}
	if code := tm.WaitExit("attach", work, 15*time.Second); code != "0" {
		t.Errorf("faber attach exited %s, want 0:\n%s", code, tm.Capture("attach"))
	}
}
