// Package tmuxtest runs the real faber binary in tmux for end-to-end tests of
// what a person sees in a terminal: one tmux server per test, sessions of a
// given size, keys sent, screens captured and polled.
package tmuxtest

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Server is a tmux server of one test, on a socket of its own.
type Server struct {
	t    testing.TB
	sock string
}

// New skips where tmux cannot run (-short, Windows, no tmux), builds faber
// from pkgDir (the module root) into a temporary directory, and returns the
// server (killed when the test ends), the binary and that directory.
func New(t testing.TB, name, pkgDir string) (s *Server, bin, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("tmux test: skipped with -short")
	}
	if runtime.GOOS == "windows" {
		t.Skip("tmux test: not on windows")
	}
	if _, err := osexec.LookPath("tmux"); err != nil {
		t.Skip("tmux test: tmux is not installed")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "faber")
	build := osexec.Command("go", "build", "-o", bin, ".")
	build.Dir = pkgDir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s = &Server{t: t, sock: fmt.Sprintf("faber-%s-%d", name, os.Getpid())}
	t.Cleanup(func() { _ = osexec.Command("tmux", "-L", s.sock, "kill-server").Run() })
	return s, bin, dir
}

// SetT points the server's failures at a subtest.
func (s *Server) SetT(t testing.TB) { s.t = t }

// Cmd runs a tmux command on the server.
func (s *Server) Cmd(args ...string) string {
	s.t.Helper()
	out, err := osexec.Command("tmux", append([]string{"-L", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Start runs command in a new w×h session named name, in dir; its exit code
// goes to dir/<name>.exit, and the session stays a while so that the screen
// can be read. CI is unset there, as in a person's terminal: under CI=true
// (.ci/run) faber's --ui auto would print plain lines instead of the live view. The registry of state dirs is off (FABER_REGISTRY=off), so
// that a test never registers its temporary dirs in the real home, unless
// command turns it on (env FABER_REGISTRY=on XDG_STATE_HOME=... faber ...).
func (s *Server) Start(name, dir, command string, w, h int) {
	s.t.Helper()
	s.Cmd("new-session", "-d", "-s", name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", dir,
		fmt.Sprintf("unset CI; FABER_REGISTRY=off; export FABER_REGISTRY; %s; echo $? > %s.exit; sleep 60", command, name))
}

// Capture is the session's screen.
func (s *Server) Capture(name string) string {
	s.t.Helper()
	return s.Cmd("capture-pane", "-p", "-t", name)
}

// Keys types keys (tmux key names) into the session.
func (s *Server) Keys(name string, keys ...string) {
	s.t.Helper()
	s.Cmd(append([]string{"send-keys", "-t", name}, keys...)...)
}

// HistorySize is how many lines scrolled off the session's screen.
func (s *Server) HistorySize(name string) string {
	s.t.Helper()
	return strings.TrimSpace(s.Cmd("display-message", "-p", "-t", name, "#{history_size}"))
}

// WaitFor polls the screen until ok holds, at most d; what names the
// expectation in the failure.
func (s *Server) WaitFor(name string, d time.Duration, what string, ok func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(d)
	var screen string
	for time.Now().Before(deadline) {
		screen = s.Capture(name)
		if ok(screen) {
			return screen
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s: %s not shown within %v:\n%s", name, what, d, screen)
	return ""
}

// WaitExit waits for the command started as name in dir to end and returns
// its exit code.
func (s *Server) WaitExit(name, dir string, d time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, name+".exit")); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s did not exit within %v:\n%s", name, d, s.Capture(name))
	return ""
}

// PlanDir makes the directory parent/name holding plan.yaml with plan, a
// working directory for faber in a test; it returns it and the state dir
// the test gives faber there (.faber in it).
func PlanDir(t testing.TB, parent, name, plan string) (work, stateDir string) {
	t.Helper()
	work = filepath.Join(parent, name)
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return work, filepath.Join(work, ".faber")
}
