package main

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/tmuxtest"
)

// TestUITmux runs the real binary in tmux: two state dirs registered (under
// an XDG_STATE_HOME of the test's), one with a run that ended and one with a
// run whose step sleeps. faber ui, started in a third directory, shows both
// runs with their dirs; / filters them; enter on the active run opens its
// live view and q comes back to the board; x x stops the run, which ends
// interrupted; enter on the run that ended shows its status, q comes back;
// q quits, exit 0.
func TestUITmux(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "ui", ".")
	xdg := filepath.Join(dir, "xdg")
	env := "env FABER_REGISTRY=on XDG_STATE_HOME=" + xdg + " "
	for _, d := range []string{"one", "two", "three"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "one", "plan.yaml"), "name: quick\nsteps:\n  - id: hello\n    run: echo hello\n")
	write(filepath.Join(dir, "two", "plan.yaml"), "name: slow\nsteps:\n  - id: first\n    run: echo first\n  - id: nap\n    needs: [first]\n    run: sh -c 'echo working; sleep 120'\n")

	quick := osexec.Command(bin, "run", "plan.yaml", "--ui", "plain")
	quick.Dir = filepath.Join(dir, "one")
	quick.Env = append(os.Environ(), "FABER_REGISTRY=on", "XDG_STATE_HOME="+xdg, "NO_COLOR=1")
	if out, err := quick.CombinedOutput(); err != nil {
		t.Fatalf("faber run: %v\n%s", err, out)
	}
	tm.Start("owner", filepath.Join(dir, "two"), env+bin+" run plan.yaml --ui plain", 100, 20)
	tm.WaitFor("owner", 15*time.Second, "the sleeping step", func(s string) bool { return strings.Contains(s, "working") })

	tm.Start("ui", filepath.Join(dir, "three"), env+bin+" ui", 100, 20)
	board := tm.WaitFor("ui", 15*time.Second, "both runs with their dirs", func(s string) bool {
		return strings.Contains(s, "quick") && strings.Contains(s, "one/.faber") &&
			strings.Contains(s, "▶ in_progress") && strings.Contains(s, "two/.faber") && strings.Contains(s, "1/2")
	})
	t.Logf("the board:\n%s", board)
	slowID := regexp.MustCompile(`slow-\d{8}T\d{6}-[0-9a-f]{4}`).FindString(board)
	if slowID == "" {
		t.Fatalf("no run id of slow on the board:\n%s", board)
	}

	// / filters; esc clears
	tm.Keys("ui", "/", "q", "u", "i", "c")
	tm.WaitFor("ui", 5*time.Second, "the filtered board", func(s string) bool {
		return strings.Contains(s, "1 of 2 runs") && strings.Contains(s, "/quic") && !strings.Contains(s, "slow-")
	})
	tm.Keys("ui", "Escape")
	tm.WaitFor("ui", 5*time.Second, "both runs again", func(s string) bool {
		return strings.Contains(s, "2 runs") && strings.Contains(s, "slow-") && strings.Contains(s, "quick-")
	})

	// enter on the active run (the newest, selected): its live view; q back
	tm.Keys("ui", "g", "Enter")
	tm.WaitFor("ui", 15*time.Second, "the run's live view", func(s string) bool {
		return strings.Contains(s, "nap") && strings.Contains(s, "│ working") && strings.Contains(s, "q/ctrl+c leave")
	})
	tm.Keys("ui", "q")
	tm.WaitFor("ui", 10*time.Second, "the board again", func(s string) bool {
		return strings.Contains(s, "PROGRESS") && strings.Contains(s, slowID)
	})

	// x x stops it: the run ends interrupted
	tm.Keys("ui", "x")
	tm.WaitFor("ui", 5*time.Second, "the confirm prompt", func(s string) bool { return strings.Contains(s, "press x again to stop "+slowID) })
	tm.Keys("ui", "x")
	tm.WaitFor("ui", 20*time.Second, "the run interrupted", func(s string) bool {
		return strings.Contains(s, "■ interrupted") && !strings.Contains(s, "in_progress")
	})
	if code := tm.WaitExit("owner", filepath.Join(dir, "two"), 15*time.Second); code != "130" {
		t.Errorf("the stopped run's faber exited %s, want 130", code)
	}

	// enter on the run that ended: its status; q back
	tm.Keys("ui", "/", "q", "u", "i", "c", "k", "Enter", "Enter")
	tm.WaitFor("ui", 10*time.Second, "the status of quick", func(s string) bool {
		return strings.Contains(s, "run quick-") && strings.Contains(s, "STEP") && strings.Contains(s, "hello")
	})
	tm.Keys("ui", "q")
	tm.WaitFor("ui", 5*time.Second, "the board again", func(s string) bool { return strings.Contains(s, "PROGRESS") })
	tm.Keys("ui", "q")
	if code := tm.WaitExit("ui", filepath.Join(dir, "three"), 10*time.Second); code != "0" {
		t.Errorf("faber ui exited %s, want 0:\n%s", code, tm.Capture("ui"))
	}
}
