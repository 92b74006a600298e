//go:build linux

package main

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunDirReadOnly makes the run directory read-only while a step runs
// (a read-only bind mount over it). faber used to print "run interrupted"
// and then loop for good in the store's close (Badger retries a failed
// memtable flush forever); now the run ends with one `faber:` line and
// exit 4 in bounded time, and once the directory is writable again a
// resume finishes the run.
func TestRunDirReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount the run directory read-only")
	}
	work := t.TempDir()
	stateDir := filepath.Join(work, ".faber")
	plan := `name: ro
steps:
  - id: a
    run: 'touch started; while [ ! -f remounted ]; do sleep 0.05; done'
  - id: b
    needs: [a]
    run: echo b
`
	if err := os.WriteFile(filepath.Join(work, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	faber := func(args ...string) (*osexec.Cmd, *bytes.Buffer) {
		cmd := faberCmd(self, work, stateDir, args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		return cmd, &errb
	}
	cmd, stderr := faber("run", "plan.yaml", "--ui", "plain")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	waitFor(t, filepath.Join(work, "started"), done)
	runs, err := filepath.Glob(filepath.Join(stateDir, "runs", "*"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	runDir := runs[0]
	if err := syscall.Mount(runDir, runDir, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount: %v", err)
	}
	mounted := true
	unmount := func() {
		if mounted {
			mounted = false
			if err := syscall.Unmount(runDir, syscall.MNT_DETACH); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(unmount)
	if err := syscall.Mount("", runDir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	if err := os.WriteFile(filepath.Join(work, "remounted"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Bounded: the close gives up after 10 s at most; a minute is generous.
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("faber still runs a minute after its run dir became read-only; stderr:\n%s", stderr)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitState {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitState, stderr)
	}
	if s := stderr.String(); !strings.HasPrefix(s, "faber: ") || strings.Count(s, "\n") != 1 || !strings.Contains(s, "read-only file system") {
		t.Fatalf("stderr %q: want one faber: line naming the read-only file system", s)
	}

	unmount()
	cmd, stderr = faber("resume", filepath.Base(runDir), "--ui", "plain")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("resume: %v\n%s%s", err, out.String(), stderr)
	}
	if !strings.Contains(out.String(), "✓ b success") {
		t.Fatalf("resume did not run b:\n%s", out.String())
	}
}

// waitFor waits for a file to appear, or fails the test after 20 s or once
// done is closed (the process that should make it has ended).
func waitFor(t *testing.T, path string, done <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-done:
			t.Fatalf("%s never appeared: the process ended", path)
		default:
		}
	}
	t.Fatalf("%s did not appear within 20s", path)
}

// TestRunDirVanished removes the run directory while a step runs: faber
// used to loop for good in the store's close; now it ends with one
// `faber:` line and exit 4 in bounded time.
func TestRunDirVanished(t *testing.T) {
	work := t.TempDir()
	stateDir := filepath.Join(work, ".faber")
	plan := `name: gone
steps:
  - id: a
    run: 'rm -rf "$FABER_STATE_DIR/runs/$FABER_RUN_ID"'
  - id: b
    needs: [a]
    run: echo b
`
	if err := os.WriteFile(filepath.Join(work, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := faberCmd(self, work, stateDir, "run", "plan.yaml", "--ui", "plain")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("faber still runs a minute after its run dir was removed; stderr:\n%s", &stderr)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitState {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitState, &stderr)
	}
	if s := stderr.String(); !strings.HasPrefix(s, "faber: ") || strings.Count(s, "\n") != 1 || !strings.Contains(s, "no such file or directory") {
		t.Fatalf("stderr %q: want one faber: line naming the missing directory", s)
	}
}
