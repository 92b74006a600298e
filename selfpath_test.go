package main

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestSelfPathOutlivesItsFile: sub-plan steps start faber through
// selfPath. On Linux it is /proc/PID/exe, which stays this binary when its
// file is removed (go run's binary once the foreground that q left has
// exited) and when a wrapper shell execs it (where /proc/self/exe would be
// the shell).
func TestSelfPathOutlivesItsFile(t *testing.T) {
	p := selfPath()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err1 := os.Stat(p)
	b, err2 := os.Stat(exe)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Fatalf("selfPath() = %q is not this binary %q (%v, %v)", p, exe, err1, err2)
	}
	if runtime.GOOS == "linux" && (!strings.HasPrefix(p, "/proc/") || strings.Contains(p, "self")) {
		t.Errorf("selfPath() = %q, want /proc/<pid>/exe", p)
	}
}
