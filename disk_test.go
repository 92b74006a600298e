//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// TestFullDisk runs a plan whose step fills the state dir's file system (a
// small tmpfs): faber must not crash (no Go fault, no panic), the run ends
// with one `faber:` line naming the full state dir and exit 4; list, status
// and events work while the disk is still full; and once space is freed,
// resume finishes the run without re-running the step that succeeded.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	cases := []struct {
		name string
		ui   string
		fill string // how step b fills the disk
	}{
		// Output piped through faber: its write to the log fails.
		{"log/plain", "plain", "head -c 40000000 /dev/zero"},
		// Output written by the step itself: faber finds the disk full.
		{"log/json", "json", "head -c 40000000 /dev/zero"},
		{"outputs/json", "json", "head -c 40000000 /dev/zero > \"$FABER_OUTPUT_DIR/big\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { testFullDisk(t, c.ui, c.fill) })
	}
}

func testFullDisk(t *testing.T, ui, fill string) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=32m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	stateDir := filepath.Join(mnt, ".faber")
	work := t.TempDir()
	plan := `name: full
steps:
  - id: a
    run: echo a >> ran.txt
  - id: b
    needs: [a]
    run: 'if [ -f fixed ]; then echo small; else ` + strings.ReplaceAll(fill, "'", "''") + `; fi'
  - id: c
    needs: [b]
    run: echo c >> ran.txt
`
	if err := os.WriteFile(filepath.Join(work, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	faber := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := faberCmd(self, work, stateDir, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*osexec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	noCrash := func(what, stderr string) {
		t.Helper()
		for _, bad := range []string{"panic", "goroutine", "internal error", "SIGBUS", "fatal error"} {
			if strings.Contains(stderr, bad) {
				t.Fatalf("%s: %q on stderr:\n%s", what, bad, stderr)
			}
		}
	}

	// Leave room for the run to start, not for step b's output.
	filler := fillDisk(t, mnt, "filler", 14<<20)
	_, stderr, code := faber("run", "plan.yaml", "--ui", ui)
	noCrash("run", stderr)
	if code != exitState {
		t.Fatalf("run: exit %d, want %d; stderr:\n%s", code, exitState, stderr)
	}
	if want := "faber: state dir " + stateDir + ": no space left on device"; !strings.HasPrefix(stderr, want) ||
		strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "faber resume full-") {
		t.Fatalf("run: stderr %q, want one line starting %q and saying how to resume", stderr, want)
	}

	// Not a byte left: the commands that only read still work.
	filler2 := fillDisk(t, mnt, "filler2", 0)
	out, stderr, code := faber("list", "--json")
	var runs []run.ListItem
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 || runs[0].Status != "interrupted" {
		t.Fatalf("list on a full disk: exit %d, %s %s", code, out, stderr)
	}
	runID := runs[0].RunID
	st := diskStatus(t, faber, runID)
	if st["a"] != "success/1" || st["b"] != "interrupted/1" || st["c"] != "pending/0" || st[""] != "interrupted" {
		t.Fatalf("status on a full disk: %v", st)
	}
	out, stderr, code = faber("events", runID, "--json")
	if code != 0 || !strings.Contains(out, `"type":"warning"`) || !strings.Contains(out, `"status":"interrupted"`) {
		t.Fatalf("events on a full disk: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{{"status", runID}, {"events", runID}, {"list"}, {"logs", runID, "a"}} {
		if _, stderr, code := faber(args...); code != 0 {
			t.Fatalf("%v on a full disk: exit %d: %s", args, code, stderr)
		}
	}

	// Free the space, fix b, resume: a is not run again.
	for _, f := range []string{filler, filler2, filepath.Join(stateDir, "runs", runID, "outputs", "big")} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = faber("resume", runID, "--ui", ui)
	noCrash("resume", stderr)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	st = diskStatus(t, faber, runID)
	if st["a"] != "success/1" || st["b"] != "success/2" || st["c"] != "success/1" || st[""] != "success" {
		t.Fatalf("status after resume: %v", st)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "ran.txt")); string(b) != "a\nc\n" {
		t.Fatalf("steps that ran: %q, want a once and c once", b)
	}
}

// diskStatus returns "status/attempt" by step id from faber status --json,
// and the run's status under "".
func diskStatus(t *testing.T, faber func(...string) (string, string, int), runID string) map[string]string {
	t.Helper()
	out, stderr, code := faber("status", runID, "--json")
	var s struct {
		Status string `json:"status"`
		Steps  []struct {
			ID      string `json:"id"`
			Status  string `json:"status"`
			Attempt int    `json:"attempt"`
		} `json:"steps"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("status: exit %d: %s%s", code, out, stderr)
	}
	m := map[string]string{"": s.Status}
	for _, st := range s.Steps {
		m[st.ID] = st.Status + "/" + string(rune('0'+st.Attempt))
	}
	return m
}

// fillDisk writes dir/name until the file system is full, then gives back
// leave bytes of it; it returns the file's path.
func fillDisk(t *testing.T, dir, name string, leave int64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !state.IsNoSpace(err) {
				t.Fatal(err)
			}
			break
		}
	}
	if leave > 0 {
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(max(fi.Size()-leave, 0)); err != nil {
			t.Fatal(err)
		}
	}
	return path
}
