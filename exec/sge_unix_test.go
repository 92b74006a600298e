//go:build unix

package exec

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSgeScriptStopStatus: qdel of a -notify job sends SIGUSR2 to the
// job's process group; the script turns it into SIGTERM to the step, and
// the job ends with the step's own status (143), never with the status of
// the script's interrupted wait (140, 128+SIGUSR2), however the signal and
// the step's end interleave.
func TestSgeScriptStopStatus(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "attempt-1.sge")
	// The step says when it runs: the script's trap is set by then (a
	// signal before the script's first lines, under load, is not what
	// this tests).
	script := sgeScript("faber-r-s-a1", dir, []string{"PATH=" + os.Getenv("PATH")}, []string{"sh", "-c", "echo > started; exec sleep 30"})
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 15 {
		cmd := osexec.Command("sh", path)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started := filepath.Join(dir, "started")
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil || time.Now().After(deadline) {
				break
			}
		}
		os.Remove(started)
		time.Sleep(time.Duration(10*i) * time.Millisecond)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGUSR2) // as Grid Engine does: the whole group
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*osexec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 143 {
			t.Fatalf("round %d: the job exits %d, want 143 (the step's SIGTERM); stderr %q", i, code, stderr.String())
		}
	}
}
