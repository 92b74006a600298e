package tui

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
)

// TestTmuxSmoke runs the real binary in a 120×40 tmux pane: the live view
// appears within a second and redraws in place, the final summary names the
// failed step and the resume command, and the exit code is the run's; then
// Ctrl-C during a long step ends the run interrupted (exit 130) with no
// process of the step left.
func TestTmuxSmoke(t *testing.T) {
	tm, bin, dir := newTmux(t, "smoke")

	t.Run("run", func(t *testing.T) {
		tm.t = t
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
		tm.start("run", work, bin+" run plan.yaml --ui tui")
		screen := tm.waitFor("run", 5*time.Second, func(s string) bool {
			return strings.Contains(s, "chatty") && strings.Contains(s, "deploy") && strings.Contains(s, "│ line ")
		})
		t.Logf("live view after %v:\n%s", time.Since(start).Round(time.Millisecond), screen)
		id := regexp.MustCompile(`smoke-\d{8}T\d{6}-[0-9a-f]{4}`).FindString(screen)
		if id == "" {
			t.Fatalf("no run id on screen:\n%s", screen)
		}
		time.Sleep(600 * time.Millisecond)
		if h := tm.historySize("run"); h != "0" {
			t.Errorf("the pane scrolled %s lines while running: frames are not drawn in place", h)
		}
		code := tm.waitExit(work, 15*time.Second)
		final := tm.capture("run")
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
		tm.t = t
		work := filepath.Join(dir, "intr")
		writeFile(t, filepath.Join(work, "plan.yaml"), `name: nap
steps:
  - id: nap
    run: echo napping; sleep 120.25
`)
		tm.start("intr", work, bin+" run plan.yaml --ui tui")
		tm.waitFor("intr", 5*time.Second, func(s string) bool { return strings.Contains(s, "│ napping") })
		tm.keys("intr", "C-c")
		start := time.Now()
		code := tm.waitExit(work, 8*time.Second)
		t.Logf("exit %s after %v:\n%s", code, time.Since(start).Round(time.Millisecond), tm.capture("intr"))
		if code != "130" {
			t.Errorf("exit code %s, want 130", code)
		}
		if !strings.Contains(tm.capture("intr"), "interrupted") {
			t.Errorf("final screen does not say interrupted")
		}
		if pids := procsWithArgs("sleep", "120.25"); len(pids) > 0 {
			t.Errorf("sleep left running: %v", pids)
		}
	})
}

// newTmux skips where tmux cannot run, builds the real binary into a
// temporary directory and returns a tmux server of the test's own (killed
// at the end), the binary and the directory.
func newTmux(t *testing.T, name string) (tm *tmux, bin, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("tmux test: skipped with -short")
	}
	if _, err := osexec.LookPath("tmux"); err != nil {
		t.Skip("tmux test: tmux is not installed")
	}
	if runtime.GOOS == "windows" {
		t.Skip("tmux test: not on windows")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "faber")
	build := osexec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tm = &tmux{t: t, sock: fmt.Sprintf("faber-%s-%d", name, os.Getpid())}
	t.Cleanup(func() { _ = osexec.Command("tmux", "-L", tm.sock, "kill-server").Run() })
	return tm, bin, dir
}

type tmux struct {
	t    *testing.T
	sock string
}

func (x *tmux) cmd(args ...string) string {
	x.t.Helper()
	out, err := osexec.Command("tmux", append([]string{"-L", x.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// start runs command in a new 120×40 session; it writes its exit code to
// exit.txt in dir and then stays a while so the screen can be read.
func (x *tmux) start(name, dir, command string) {
	x.t.Helper()
	sh := fmt.Sprintf("%s; echo $? > exit.txt; sleep 60", command)
	x.cmd("new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c", dir, sh)
}

func (x *tmux) capture(name string) string {
	x.t.Helper()
	return x.cmd("capture-pane", "-p", "-t", name)
}

func (x *tmux) keys(name string, keys ...string) {
	x.t.Helper()
	x.cmd(append([]string{"send-keys", "-t", name}, keys...)...)
}

func (x *tmux) historySize(name string) string {
	x.t.Helper()
	return strings.TrimSpace(x.cmd("display-message", "-p", "-t", name, "#{history_size}"))
}

func (x *tmux) waitFor(name string, d time.Duration, ok func(string) bool) string {
	x.t.Helper()
	deadline := time.Now().Add(d)
	var s string
	for time.Now().Before(deadline) {
		s = x.capture(name)
		if ok(s) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	x.t.Fatalf("screen not as expected after %v:\n%s", d, s)
	return ""
}

func (x *tmux) waitExit(dir string, d time.Duration) string {
	x.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "exit.txt")); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
	x.t.Fatalf("faber did not exit within %v", d)
	return ""
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
