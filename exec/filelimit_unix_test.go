//go:build unix

package exec

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStartAtFileLimit: a step whose log file is the last descriptor the
// open-file limit allows cannot start (Go's fork fails with EBADF); that
// is faber out of descriptors, never the step's failure. It runs in a
// child test process under `ulimit -n 64`.
func TestStartAtFileLimit(t *testing.T) {
	if os.Getenv("FABER_TEST_AT_FILE_LIMIT") == "" {
		cmd := osexec.Command("/bin/sh", "-c", `ulimit -n 64 && exec "$0" -test.run='^TestStartAtFileLimit$' -test.v`, os.Args[0])
		cmd.Env = append(os.Environ(), "FABER_TEST_AT_FILE_LIMIT="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestStartAtFileLimit") {
			t.Fatalf("child test: %v\n%s", err, out)
		}
		return
	}
	dir := os.Getenv("FABER_TEST_AT_FILE_LIMIT")
	devNull() // opened once, as in a run
	// Fill every descriptor, then free a few below the last for the fork's
	// own pipe: the last one is the step's stdout.
	var files []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		files = append(files, f)
	}
	if len(files) < 10 {
		t.Fatalf("only %d descriptors free under ulimit -n 64", len(files))
	}
	last := files[len(files)-1]
	for _, f := range files[:len(files)-1] {
		f.Close()
	}
	defer last.Close()
	if last.Fd() != 63 {
		t.Fatalf("the last descriptor is %d, want 63", last.Fd())
	}
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ps := procSpec{argv: []string{"/bin/sh", "-c", "true"}}
	_, _, err = startProcess(ps, &localAttempt{}, last, out)
	if err == nil {
		t.Skip("this Go starts a process whose stdout is the last descriptor: nothing to classify")
	}
	var o outcome
	o.cannotStart(err)
	if o.sysErr == nil || !Scarce(err) || !strings.Contains(err.Error(), syscall.EMFILE.Error()) {
		t.Fatalf("start at the file limit: %v (scarce %v), want faber's want of descriptors", err, Scarce(err))
	}
}

// TestScarceForkEBADF: a fork that fails with EBADF is faber's want of
// descriptors (a client command's pipes at the limit), any other EBADF is
// not.
func TestScarceForkEBADF(t *testing.T) {
	if !Scarce(&os.PathError{Op: "fork/exec", Path: "/usr/bin/sbatch", Err: syscall.EBADF}) {
		t.Error("fork/exec EBADF is not scarce")
	}
	if Scarce(&os.PathError{Op: "read", Path: "x", Err: syscall.EBADF}) {
		t.Error("a read's EBADF is scarce")
	}
}
