package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/faber-run/faber/exec"
)

// TestSelfProgramOutlivesItsFile: sub-plan steps start faber through
// exec.SelfProgram. Its path while the file exists; on Linux, once the
// file is gone (go run's binary after q left the run in the background and
// the foreground exited), /proc/PID/exe, which is still this binary.
func TestSelfProgramOutlivesItsFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got := exec.SelfProgram(exe); got != exe {
		t.Errorf("SelfProgram(%q) = %q, want it unchanged while it exists", exe, got)
	}
	gone := filepath.Join(t.TempDir(), "faber-removed")
	got := exec.SelfProgram(gone)
	if runtime.GOOS != "linux" {
		return
	}
	if !strings.HasPrefix(got, "/proc/") || strings.Contains(got, "self") {
		t.Fatalf("SelfProgram of a removed file = %q, want /proc/<pid>/exe", got)
	}
	a, err1 := os.Stat(got)
	b, err2 := os.Stat(exe)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Errorf("%q is not this binary %q (%v, %v)", got, exe, err1, err2)
	}
}
