package tui

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/tmuxtest"
)

// TestTmuxSmoke runs the real binary in a 120×40 tmux pane: the live view
// appears within a second and redraws in place, the final summary names the
// failed step and the resume command, and the exit code is the run's; then
// Ctrl-C during a long step ends the run interrupted (exit 130) with no
// process of the step left.
func TestTmuxSmoke(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "smoke", "..")

	t.Run("run", func(t *testing.T) {
		tm.SetT(t)
		work := filepath.Join(dir, "run")
		writeFile(t, filepath.Join(work, "plan.yaml"), `name: smoke
phases:
  - name: build
    steps:
      - id: chatty
        run: for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.2; done
  - name: ship
    steps:
      - id: deploy
        run: echo deploying; echo "connection refused" >&2; exit 3
      - id: notify
        run: echo never
`)
		start := time.Now()
		tm.Start("run", work, bin+" run plan.yaml --ui tui", 120, 40)
		screen := tm.WaitFor("run", 5*time.Second, "the expected screen", func(s string) bool {
			return strings.Contains(s, "chatty") && strings.Contains(s, "deploy") && strings.Contains(s, "│ line ")
		})
		t.Logf("live view after %v:\n%s", time.Since(start).Round(time.Millisecond), screen)
		id := regexp.MustCompile(`smoke-\d{8}T\d{6}-[0-9a-f]{4}`).FindString(screen)
		if id == "" {
			t.Fatalf("no run id on screen:\n%s", screen)
		}
		time.Sleep(600 * time.Millisecond)
		if h := tm.HistorySize("run"); h != "0" {
			t.Errorf("the pane scrolled %s lines while running: frames are not drawn in place", h)
		}
		code := tm.WaitExit("run", work, 15*time.Second)
		final := tm.Capture("run")
		t.Logf("after the run:\n%s", final)
		if code != "1" {
			t.Errorf("exit code %s, want 1", code)
		}
		for _, want := range []string{"failed steps:", "deploy failure: exit 3: connection refused", "faber resume " + id} {
			if !strings.Contains(final, want) {
				t.Errorf("final screen lacks %q", want)
			}
		}
	})

	t.Run("ctrl-c", func(t *testing.T) {
		tm.SetT(t)
		work := filepath.Join(dir, "intr")
		writeFile(t, filepath.Join(work, "plan.yaml"), `name: nap
steps:
  - id: nap
    run: echo napping; sleep 120.25
`)
		tm.Start("intr", work, bin+" run plan.yaml --ui tui", 120, 40)
		tm.WaitFor("intr", 5*time.Second, "the expected screen", func(s string) bool { return strings.Contains(s, "│ napping") })
		tm.Keys("intr", "C-c")
		start := time.Now()
		code := tm.WaitExit("intr", work, 8*time.Second)
		t.Logf("exit %s after %v:\n%s", code, time.Since(start).Round(time.Millisecond), tm.Capture("intr"))
		if code != "130" {
			t.Errorf("exit code %s, want 130", code)
		}
		if !strings.Contains(tm.Capture("intr"), "interrupted") {
			t.Errorf("final screen does not say interrupted")
		}
		if pids := procsWithArgs("sleep", "120.25"); len(pids) > 0 {
			t.Errorf("sleep left running: %v", pids)
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// procsWithArgs lists the processes whose argv is exactly args (Linux /proc;
// elsewhere nothing is found).
func procsWithArgs(args ...string) []string {
	want := strings.Join(args, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == want {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
