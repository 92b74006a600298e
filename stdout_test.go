package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// fabercmd runs this test binary as faber in dir with its own state dir.
func fabercmd(t *testing.T, dir string, args ...string) *osexec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := faberCmd(self, dir, filepath.Join(dir, ".faber"), args...)
	return cmd
}

// TestClosedStdoutRunFinishes: 'faber run plan.yaml | head -1' must not kill
// faber (SIGPIPE) or leave the run interrupted: faber stops writing progress
// and the run finishes, recorded truthfully, with the run's exit code.
func TestClosedStdoutRunFinishes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGPIPE on Windows")
	}
	dir := t.TempDir()
	plan := "name: chatty\nsteps:\n  - id: talk\n    run: for i in $(seq 1 5000); do echo line $i; done\n  - id: after\n    run: sleep 0.3; echo done > after.txt\n"
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ui := range []string{"plain", "json"} {
		os.Remove(filepath.Join(dir, "after.txt"))
		cmd := fabercmd(t, dir, "run", "plan.yaml", "--ui", ui)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// head -1: read one line, then close the pipe.
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatalf("--ui %s: first line: %v", ui, err)
		}
		out.Close()
		err = cmd.Wait()
		var ee *osexec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("--ui %s with stdout closed: faber ended %v, want exit 0", ui, err)
		} else if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "after.txt")); err != nil {
			t.Errorf("--ui %s: the step after the chatty one did not run: %v", ui, err)
		}
		b, err := fabercmd(t, dir, "list", "--json").Output()
		if err != nil {
			t.Fatal(err)
		}
		var runs []struct{ Status string }
		if err := json.Unmarshal(b, &runs); err != nil || len(runs) == 0 {
			t.Fatalf("list --json: %v %s", err, b)
		}
		if runs[0].Status != "success" {
			t.Errorf("--ui %s: the run is recorded %q, want success", ui, runs[0].Status)
		}
	}
}

// TestWriteErrorExitsOne: an error no command classified is exit 1, never
// 2 (reserved for usage errors and invalid plans): status --json > /dev/full.
func TestWriteErrorExitsOne(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here")
	}
	defer full.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte("name: p\nsteps:\n  - id: a\n    run: \"true\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := fabercmd(t, dir, "run", "plan.yaml").CombinedOutput(); err != nil {
		t.Fatalf("run: %v %s", err, out)
	}
	b, _ := fabercmd(t, dir, "list", "--json").Output()
	var runs []struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &runs); err != nil || len(runs) != 1 {
		t.Fatalf("list --json: %v %s", err, b)
	}
	for _, args := range [][]string{{"status", runs[0].RunID, "--json"}, {"status", runs[0].RunID}, {"list"}, {"list", "--json"}, {"events", runs[0].RunID, "--json"}} {
		cmd := fabercmd(t, dir, args...)
		cmd.Stdout = full
		errOut, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		msg, _ := bufio.NewReader(errOut).ReadString('\n')
		err := cmd.Wait()
		code := 0
		var ee *osexec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != 1 {
			t.Errorf("faber %v > /dev/full: exit %d (%q), want 1", args, code, msg)
		}
	}
}
