//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestScarceFiles runs a 1,000-item fan-out at --jobs 16 under `ulimit -n
// 64`: faber runs out of file descriptors starting a step, and must stop
// with one `faber:` line saying so and how to go on, exit 4, the run
// interrupted and resumable; no step recorded success without its attempt
// having exited 0, no step failed for faber's want of descriptors, and the
// event log's seq contiguous. A resume with the normal limit finishes the
// run. Under a limit too low for faber's own files (12), nothing starts:
// the same one line and exit 4, never Badger's fatal log.
func TestScarceFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1,000 steps: not in -short mode")
	}
	dir := t.TempDir()
	plan := `name: scarce
steps:
  - id: fan
    foreach: {range: [1, 1000]}
    run: 'if [ -e slow ]; then sleep 1; fi; echo {item} > marks/{item}'
  - id: after
    needs: [fan]
    run: echo after > marks/after
`
	for name, data := range map[string]string{"plan.yaml": plan, "slow": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "marks"), 0o755); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, ".faber")
	faber := limitedFaber(t, dir)
	oneLine := func(what, stderr string, want ...string) { t.Helper(); scarceLine(t, what, stderr, want...) }

	// Too few for faber itself: refused before anything is written.
	_, stderr, code := faber(12, "run", "plan.yaml", "--jobs", "16")
	if code != exitState {
		t.Fatalf("run under ulimit -n 12: exit %d, want %d; stderr:\n%s", code, exitState, stderr)
	}
	oneLine("run under ulimit -n 12", stderr, "open-file limit is 12", "ulimit -n")
	if ents, _ := os.ReadDir(filepath.Join(stateDir, "runs")); len(ents) != 0 {
		t.Fatalf("a refused run left %d run directories", len(ents))
	}

	_, stderr, code = faber(64, "run", "plan.yaml", "--jobs", "16")
	if code != exitState {
		t.Fatalf("run under ulimit -n 64: exit %d, want %d; stderr:\n%s", code, exitState, stderr)
	}
	oneLine("run under ulimit -n 64", stderr, "too many open files", "open-file limit is 64", "ulimit -n", "faber resume scarce-")
	runID := onlyRun(t, faber, "interrupted")
	checkScarceEvents(t, faber, runID, false)

	// The normal limit, quick steps: resume finishes the run.
	if err := os.Remove(filepath.Join(dir, "slow")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := faber(0, "resume", runID, "--jobs", "16"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	checkScarceEvents(t, faber, runID, true)
	marks, _ := os.ReadDir(filepath.Join(dir, "marks"))
	if len(marks) != 1001 {
		t.Fatalf("%d steps left their mark, want 1001", len(marks))
	}
}

// TestScarceFilesSubPlan: a sub-plan step whose child run stops for want of
// file descriptors (its faber exits 4) is no failure of the step: the
// parent stops the same way, with one line naming the step and the cause
// and saying to resume the parent, which then finishes both runs.
func TestScarceFilesSubPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 200 steps: not in -short mode")
	}
	dir := t.TempDir()
	files := map[string]string{
		"parent.yaml": "name: parent\nsteps:\n  - id: sub\n    plan: child.yaml\n",
		"child.yaml": "name: child\nsteps:\n  - id: fan\n    foreach: {range: [1, 200]}\n" +
			"    run: 'if [ -e slow ]; then sleep 1; fi'\n",
		"slow": "",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	faber := limitedFaber(t, dir)
	_, stderr, code := faber(64, "run", "parent.yaml", "--jobs", "16")
	if code != exitState {
		t.Fatalf("run under ulimit -n 64: exit %d, want %d; stderr:\n%s", code, exitState, stderr)
	}
	scarceLine(t, "run under ulimit -n 64", stderr, `the child run of step "sub" stopped`, "too many open files", "ulimit -n", "faber resume parent-")
	out, stderr, code := faber(0, "list", "--json")
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 2 {
		t.Fatalf("list: exit %d: %s%s", code, out, stderr)
	}
	parent := ""
	for _, r := range runs {
		if r.Status != "interrupted" {
			t.Fatalf("run %s is %s, want interrupted", r.RunID, r.Status)
		}
		if strings.HasPrefix(r.RunID, "parent-") {
			parent = r.RunID
		}
	}
	if err := os.Remove(filepath.Join(dir, "slow")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := faber(0, "resume", parent, "--jobs", "16"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	out, _, _ = faber(0, "list", "--json")
	if json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 2 || runs[0].Status != "success" || runs[1].Status != "success" {
		t.Fatalf("after resume: %s", out)
	}
}

// limitedFaber returns a function that runs faber in dir with args, under
// `ulimit -n nofile` unless it is 0.
func limitedFaber(t *testing.T, dir string) func(nofile int, args ...string) (stdout, stderr string, code int) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, ".faber")
	return func(nofile int, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		argv := append([]string{self}, args...)
		if nofile > 0 {
			argv = append([]string{"sh", "-c", `ulimit -n ` + strconv.Itoa(nofile) + ` && exec "$0" "$@"`}, argv...)
		}
		cmd := faberCmd(argv[0], dir, stateDir, argv[1:]...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*osexec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
}

// onlyRun returns the id of the state dir's one run, which must be status.
func onlyRun(t *testing.T, faber func(int, ...string) (string, string, int), status string) string {
	t.Helper()
	out, stderr, code := faber(0, "list", "--json")
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 {
		t.Fatalf("list: exit %d: %s%s", code, out, stderr)
	}
	if runs[0].Status != status {
		t.Fatalf("run status %q, want %s", runs[0].Status, status)
	}
	return runs[0].RunID
}

// scarceLine checks that stderr is one faber: line saying each of want,
// and no crash.
func scarceLine(t *testing.T, what, stderr string, want ...string) {
	t.Helper()
	for _, bad := range []string{"panic", "goroutine", "fatal error"} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("%s: %q on stderr:\n%s", what, bad, stderr)
		}
	}
	if !strings.HasPrefix(stderr, "faber: ") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("%s: stderr is not one faber: line:\n%s", what, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Fatalf("%s: stderr %q does not say %q", what, stderr, w)
		}
	}
}

// checkScarceEvents reads the run's event log: seq 1..n without a gap, no
// step success whose attempt did not exit 0, no step failure (faber's want
// of descriptors is not the step's), and, when done, every step success.
func checkScarceEvents(t *testing.T, faber func(int, ...string) (string, string, int), runID string, done bool) {
	t.Helper()
	out, stderr, code := faber(0, "events", runID, "--json")
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, stderr)
	}
	last := map[string]string{}
	var seq int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Seq        int64  `json:"seq"`
			Type       string `json:"type"`
			Step       string `json:"step_id"`
			Status     string `json:"status"`
			ExitCode   *int   `json:"exit_code"`
			AttemptEnd *struct {
				ExitCode *int `json:"exit_code"`
			} `json:"attempt_end"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if seq++; e.Seq != seq {
			t.Fatalf("event seq %d where %d was due: an event is lost", e.Seq, seq)
		}
		if e.Type != "step_status" {
			continue
		}
		last[e.Step] = e.Status
		switch e.Status {
		case "success":
			if e.Step != "fan" && (e.ExitCode == nil || *e.ExitCode != 0 || e.AttemptEnd == nil || e.AttemptEnd.ExitCode == nil || *e.AttemptEnd.ExitCode != 0) {
				t.Fatalf("step %s recorded success without its attempt exiting 0: %s", e.Step, line)
			}
		case "failure":
			t.Fatalf("step %s recorded a failure: %s", e.Step, line)
		}
	}
	if seq == 0 {
		t.Fatal("no events")
	}
	if done {
		for id, st := range last {
			if st != "success" {
				t.Fatalf("after resume, step %s is %s", id, st)
			}
		}
		if len(last) != 1002 {
			t.Fatalf("after resume, %d steps have a status, want 1002", len(last))
		}
	}
}
