package main

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/state"
)

// TestAttachTmux runs the real binary in two tmux terminals: q in the live
// view of `faber run` leaves the view, names `faber attach` and the run goes
// on; `faber attach --last` in the other terminal shows the running step and
// the line it printed before attach came; when the step ends, the attached
// view gives way to the run's summary, and both processes exit 0. Watching
// the run once it has ended prints its summary at once.
func TestAttachTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux attach test: skipped with -short")
	}
	if runtime.GOOS == "windows" {
		t.Skip("tmux attach test: not on windows")
	}
	if _, err := osexec.LookPath("tmux"); err != nil {
		t.Skip("tmux attach test: tmux is not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "faber")
	if out, err := osexec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	plan := `name: wait
steps:
  - id: waiter
    run: sh -c 'echo working; while [ ! -f go ]; do sleep 0.1; done'
`
	if err := os.WriteFile(filepath.Join(work, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := &panes{t: t, sock: fmt.Sprintf("faber-attach-%d", os.Getpid()), dir: work}
	t.Cleanup(func() { _ = osexec.Command("tmux", "-L", tm.sock, "kill-server").Run() })
	stateDir := filepath.Join(work, ".faber")

	tm.start("owner", bin+" run plan.yaml --ui tui --state-dir "+stateDir)
	screen := tm.waitFor("owner", 15*time.Second, "the live view with the step's line", func(s string) bool {
		return strings.Contains(s, "waiter") && strings.Contains(s, "│ working")
	})
	id := regexp.MustCompile(`wait-\d{8}T\d{6}-[0-9a-f]{4}`).FindString(screen)
	if id == "" {
		t.Fatalf("no run id on the owner's screen:\n%s", screen)
	}
	tm.keys("owner", "q")
	tm.waitFor("owner", 10*time.Second, "the hint naming faber attach", func(s string) bool {
		return strings.Contains(s, "faber attach "+id)
	})
	if o, err := state.OwnerOf(stateDir, id); err != nil || !o.Alive {
		t.Fatalf("after q the run's owner is gone (%+v, %v); it should go on", o, err)
	}
	if _, err := os.Stat(filepath.Join(work, "owner.exit")); err == nil {
		t.Fatalf("faber run exited after q:\n%s", tm.capture("owner"))
	}

	tm.start("attach", bin+" attach --last --state-dir "+stateDir)
	tm.waitFor("attach", 15*time.Second, "the step in_progress and its line in the log pane", func(s string) bool {
		return strings.Contains(s, id) && strings.Contains(s, "in_progress") && strings.Contains(s, "│ working") &&
			strings.Contains(s, "q/ctrl+c leave")
	})
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	final := tm.waitFor("attach", 15*time.Second, "the run's summary", func(s string) bool {
		return strings.Contains(s, id+" success in ") && strings.Contains(s, "1 success")
	})
	if code := tm.waitExit("attach", 15*time.Second); code != "0" {
		t.Errorf("faber attach exited %s, want 0 (the run's code):\n%s", code, final)
	}
	if code := tm.waitExit("owner", 15*time.Second); code != "0" {
		t.Errorf("faber run exited %s, want 0:\n%s", code, tm.capture("owner"))
	}

	// A run that has ended: its summary at once, and its code.
	tm.start("after", bin+" watch "+id+" --state-dir "+stateDir)
	if code := tm.waitExit("after", 15*time.Second); code != "0" {
		t.Errorf("faber watch of a finished run exited %s, want 0", code)
	}
	if s := tm.capture("after"); !strings.Contains(s, id+" success in ") || !strings.Contains(s, "STEP") {
		t.Errorf("faber watch of a finished run does not show its summary:\n%s", s)
	}
}

// panes runs commands in tmux sessions of 120×40, one per name, in dir.
type panes struct {
	t    *testing.T
	sock string
	dir  string
}

func (p *panes) cmd(args ...string) string {
	p.t.Helper()
	out, err := osexec.Command("tmux", append([]string{"-L", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// start runs command in a new session; its exit code goes to NAME.exit, and
// the session stays a while so that the screen can be read.
func (p *panes) start(name, command string) {
	p.t.Helper()
	p.cmd("new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c", p.dir,
		fmt.Sprintf("%s; echo $? > %s.exit; sleep 60", command, name))
}

func (p *panes) capture(name string) string {
	p.t.Helper()
	return p.cmd("capture-pane", "-p", "-t", name)
}

func (p *panes) keys(name string, keys ...string) {
	p.t.Helper()
	p.cmd(append([]string{"send-keys", "-t", name}, keys...)...)
}

// waitFor polls the screen until ok holds; what names the expectation.
func (p *panes) waitFor(name string, d time.Duration, what string, ok func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(d)
	var s string
	for time.Now().Before(deadline) {
		s = p.capture(name)
		if ok(s) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("%s: %s not shown within %v:\n%s", name, what, d, s)
	return ""
}

func (p *panes) waitExit(name string, d time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(p.dir, name+".exit")); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("%s did not exit within %v:\n%s", name, d, p.capture(name))
	return ""
}
