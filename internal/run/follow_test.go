package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/evtest"
)

func TestRunningLog(t *testing.T) {
	for _, tc := range []struct {
		status  string
		attempt int
		kind    string
		n       int
		ok      bool
	}{
		{exec.StatusInProgress, 2, "attempt", 2, true},
		{exec.StatusRemediating, 1, "handler", 1, true}, // handler-N: N is the failed attempt
		{exec.StatusRetrying, 3, "recovery", 2, true},   // the attempt is reserved already
		{exec.StatusRetrying, 1, "", 0, false},          // nothing ran before
		{exec.StatusInProgress, 0, "", 0, false},        // no attempt yet
		{exec.StatusSuccess, 1, "", 0, false},
		{exec.StatusPending, 0, "", 0, false},
		{exec.StatusPendingFailed, 1, "", 0, false},
	} {
		kind, n, ok := runningLog(tc.status, tc.attempt)
		if ok != tc.ok || (ok && (kind != tc.kind || n != tc.n)) {
			t.Errorf("runningLog(%s, %d) = %s %d %v, want %s %d %v", tc.status, tc.attempt, kind, n, ok, tc.kind, tc.n, tc.ok)
		}
	}
}

// TestLogTail: lines as the runner hands them on (no line end, no \r, a
// line without its end only at the end), a file that appears late, and a
// file written before the follower came starting at its last lines.
func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "attempt-1.out")
	var got []string
	emit := func(b []byte) { got = append(got, string(b)) }
	tl := &logTail{path: path, stream: "stdout", kind: "attempt", n: 1}
	tl.read(emit, false) // not there yet: nothing, and no error
	if len(got) != 0 {
		t.Fatalf("lines from a file that is not there: %q", got)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write("one\r\ntw")
	tl.read(emit, false)
	write("o\n\nthr")
	tl.read(emit, false)
	if want := []string{"one", "two", ""}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	write("ee")
	tl.read(emit, true)
	if want := []string{"one", "two", "", "three"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the final read: %q, want %q", got, want)
	}
	write("four\n")
	tl.read(emit, false)
	if len(got) != 4 {
		t.Errorf("a tail read after its final read: %q", got)
	}

	// Context: the last followContext lines, and where the others are.
	long := filepath.Join(dir, "handler-2.err")
	var b strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString("part")
	if err := os.WriteFile(long, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got = nil
	tl = &logTail{path: long, stream: "stderr", kind: "handler", n: 2, context: true, runID: "r-1", step: "s"}
	tl.read(emit, false)
	if len(got) != followContext+1 || got[0] != "… earlier lines: faber logs r-1 s --attempt 2 --handler --stderr" ||
		got[1] != "line 101" || got[len(got)-1] != "line 300" {
		t.Errorf("context: %d lines, %q … %q", len(got), got[:min(2, len(got))], got[len(got)-1])
	}
	tl.read(emit, true)
	if got[len(got)-1] != "part" {
		t.Errorf("the unterminated last line was not handed on at the end: %q", got[len(got)-1])
	}

	// A short file written before: all of it, no pointer to the rest.
	short := filepath.Join(dir, "attempt-3.out")
	if err := os.WriteFile(short, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = nil
	tl = &logTail{path: short, stream: "stdout", kind: "attempt", n: 3, context: true}
	tl.read(emit, true)
	if fmt.Sprint(got) != "[a b]" {
		t.Errorf("short context = %q", got)
	}
}

// TestFollowerTails: a step that starts running has its log files followed
// from their first line; when it leaves the attempt, the attempt's last
// lines come before the status that ends it, and the next thing it runs (its
// on_failure handler) is followed in turn. A sub-plan step's stdout hands on
// its child run's events.
func TestFollowerTails(t *testing.T) {
	runDir := t.TempDir()
	sink := &Collected{}
	f := NewFollower(t.TempDir(), "r-1", sink)
	f.runDir = runDir
	f.caughtUp = true
	write := func(step, kind string, n int, ext, s string) {
		p := exec.LogPath(runDir, step, kind, n, ext)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		fh, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	readTails := func() {
		for _, id := range f.order {
			for _, tl := range f.steps[id].tails {
				tl.read(f.emitter(id, tl), false)
			}
		}
	}
	status := func(step, st string, attempt int, fields map[string]any) {
		f.apply(evtest.Typed(exec.Event{Type: exec.EvStepStatus, StepID: step, Status: st, Attempt: attempt}, fields))
	}

	status("a", exec.StatusInProgress, 1, nil)
	write("a", "attempt", 1, "out", "first\n")
	write("a", "attempt", 1, "err", "warn\n")
	readTails()
	write("a", "attempt", 1, "out", "last words") // written just before it failed
	status("a", exec.StatusRemediating, 1, nil)
	write("a", "handler", 1, "out", "fixing\n")
	readTails()
	status("a", exec.StatusSuccess, 2, nil)

	status("sub", exec.StatusInProgress, 1, map[string]any{"child_run_id": "c-1"})
	write("sub", "attempt", 1, "out", `{"seq":1,"type":"run_started","run_id":"c-1"}`+"\nnot an event\n")
	readTails()

	var seen []string
	for _, e := range sink.Events {
		switch e.Type {
		case exec.EvStepStatus:
			seen = append(seen, e.StepID+" "+e.Status)
		case exec.EvStepOutput:
			seen = append(seen, fmt.Sprintf("%s %s-%d %s: %s", e.StepID, e.Data.(*exec.StepOutput).Kind, e.Attempt, e.Data.(*exec.StepOutput).Stream, e.Line))
		case exec.EvChildEvent:
			seen = append(seen, fmt.Sprintf("%s child %s %s", e.StepID, e.Child.RunID, e.Child.Type))
		}
	}
	want := []string{
		"a in_progress",
		"a attempt-1 stdout: first",
		"a attempt-1 stderr: warn",
		"a attempt-1 stdout: last words",
		"a remediating",
		"a handler-1 stdout: fixing",
		"a success",
		"sub in_progress",
		"sub child c-1 run_started",
		"sub attempt-1 stdout: not an event",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("events handed on:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if n := len(f.steps["a"].tails); n != 0 {
		t.Errorf("a finished step is still followed (%d files)", n)
	}
}
