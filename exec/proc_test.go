//go:build unix

package exec

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunProcOutputModes: an attempt whose lines nobody watches writes to
// its log files directly; one with onLine and pipeLines (a sub-plan's event
// stream) goes through pipes; one with onLine alone writes directly and is
// echoed from its files. All give the same logs, exit code and stderr tail
// (the last tailSize bytes, from which {error} and stderr_matches read).
func TestRunProcOutputModes(t *testing.T) {
	script := `echo out1; printf 'e%.0s' $(seq 70000) >&2; echo >&2; echo out2; echo "the real error" >&2; exit 3`
	run := func(t *testing.T, watch, pipe bool) (outcome, string, string, []string) {
		dir := t.TempDir()
		ps := procSpec{
			argv:       []string{"/bin/sh", "-c", script},
			dir:        dir,
			env:        os.Environ(),
			stdoutPath: filepath.Join(dir, "logs", "s", "attempt-1.out"),
			stderrPath: filepath.Join(dir, "logs", "s", "attempt-1.err"),
			timeout:    time.Minute,
			pipeLines:  pipe,
		}
		var mu sync.Mutex
		var lines []string
		pieces, pieceBytes := 0, 0
		if watch {
			ps.onLine = func(stream string, line []byte) {
				mu.Lock()
				defer mu.Unlock()
				if len(bytes.Trim(line, "e")) > 0 || len(line) == 0 {
					lines = append(lines, stream+": "+string(line))
				} else {
					pieces++
					pieceBytes += len(line)
				}
			}
		}
		o := runProc(ps, newCtrl())
		// How a line over 64 KiB is cut depends on how the reads fall.
		if watch && pipe && (pieces < 1 || pieceBytes != 70000) {
			t.Errorf("the long line was handed on in %d pieces of %d bytes in all, want 70000", pieces, pieceBytes)
		}
		out, _ := os.ReadFile(ps.stdoutPath)
		errb, _ := os.ReadFile(ps.stderrPath)
		return o, string(out), string(errb), lines
	}
	direct, dOut, dErr, dLines := run(t, false, false)
	piped, pOut, pErr, pLines := run(t, true, true)
	echoed, eOut, eErr, eLines := run(t, true, false)
	if eOut != dOut || eErr != dErr {
		t.Errorf("echo mode logs differ: %q, %d bytes of stderr", eOut, len(eErr))
	}
	// Over 32 KiB at once on stderr: skipped in the echo, said once with
	// the path; the last line is shown.
	if g := strings.Join(eLines, "|"); !strings.HasPrefix(g, "stdout: out1|stdout: out2|stderr: … faber: this stderr is written faster") ||
		!strings.HasSuffix(g, "attempt-1.err|stderr: the real error") {
		t.Errorf("echoed lines: %q", g)
	}

	if dOut != "out1\nout2\n" || pOut != dOut {
		t.Errorf("stdout logs: direct %q, piped %q", dOut, pOut)
	}
	if len(dErr) != 70000+1+len("the real error\n") || pErr != dErr {
		t.Errorf("stderr logs differ or are short: direct %d bytes, piped %d", len(dErr), len(pErr))
	}
	for _, o := range []outcome{direct, piped, echoed} {
		if o.exitCode != 3 || o.startErr != nil {
			t.Errorf("exit %d, start error %v; want 3", o.exitCode, o.startErr)
		}
		if len(o.stderrTail) != tailSize || !bytes.HasSuffix(o.stderrTail, []byte("e\nthe real error\n")) {
			t.Errorf("stderr tail: %d bytes ending %q", len(o.stderrTail), o.stderrTail[max(0, len(o.stderrTail)-20):])
		}
		if got := o.errorText(); got != "the real error" {
			t.Errorf("{error} = %q", got)
		}
	}
	if len(dLines) != 0 {
		t.Errorf("direct mode handed on lines: %q", dLines)
	}
	// The 70,000-byte line is handed on whole or in pieces (counted above),
	// and no empty line follows them.
	want := "stdout: out1|stdout: out2|stderr: the real error"
	// stdout and stderr are pumped concurrently: compare per stream.
	if g := strings.Join(filter(pLines, "stdout"), "|") + "|" + strings.Join(filter(pLines, "stderr"), "|"); g != want {
		t.Errorf("lines handed on: %q, want %q", g, want)
	}
}

func filter(lines []string, stream string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, stream+": ") {
			out = append(out, l)
		}
	}
	return out
}

// memStore records the step records of every commit.
type memStore struct {
	mu    sync.Mutex
	steps []StepState
}

func (m *memStore) Commit(_ *RunState, steps []*StepState, _ []Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range steps {
		m.steps = append(m.steps, *st)
	}
	return nil
}

// TestGroupRecorded: a running attempt's process group is committed once
// (for resume to kill if faber dies), with its leader's start time, while the
// step is in_progress. (That a short attempt skips the commit is a matter of
// timing, which tests do not assert.)
func TestGroupRecorded(t *testing.T) {
	dir := t.TempDir()
	text := "name: g\nsteps:\n  - id: quick\n    run: \"true\"\n  - id: slow\n    run: sleep 0.5\n"
	p := writePlan(t, dir, text)
	store := &memStore{}
	r := &Runner{Plan: p, RunID: "g-20260101T000000-abcd", RunDir: dir, Store: store, Jobs: 1}
	if status, err := r.Run(t.Context(), nil); status != RunSuccess || err != nil {
		t.Fatalf("run: %s %v", status, err)
	}
	groups := map[string]int{}
	for _, st := range store.steps {
		if st.PGID != 0 {
			groups[st.ID]++
			if st.Status != StatusInProgress || st.PStart == "" {
				t.Errorf("step %s: group recorded with status %s, start %q", st.ID, st.Status, st.PStart)
			}
		}
	}
	if groups["slow"] != 1 {
		t.Errorf("slow (0.5 s): its group was recorded %d times, want once", groups["slow"])
	}
}

// TestRunProcShellFallback: an argv that cannot start, given the same
// script through the shell, runs that instead; one that starts never runs
// the shell; without a fallback the start error stands.
func TestRunProcShellFallback(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "noshebang")
	if err := os.WriteFile(script, []byte("echo via the shell\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := func(argv, shell []string) procSpec {
		sub := t.TempDir()
		return procSpec{
			argv: argv, shellArgv: shell, dir: dir, env: os.Environ(),
			stdoutPath: filepath.Join(sub, "attempt-1.out"), stderrPath: filepath.Join(sub, "attempt-1.err"),
			timeout: time.Minute,
		}
	}
	for _, tc := range []struct {
		name     string
		ps       procSpec
		exit     int
		out      string
		startErr bool
	}{
		{"no #! line", spec([]string{script}, []string{"/bin/sh", "-c", script}), 0, "via the shell\n", false},
		{"starts", spec([]string{"/bin/echo", "direct"}, []string{"/bin/sh", "-c", "echo shell"}), 0, "direct\n", false},
		{"no fallback", spec([]string{script}, nil), 127, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runProc(tc.ps, newCtrl())
			out, _ := os.ReadFile(tc.ps.stdoutPath)
			if o.exitCode != tc.exit || string(out) != tc.out || (o.startErr != nil) != tc.startErr {
				t.Fatalf("exit %d, stdout %q, start error %v; want exit %d, stdout %q, start error %v",
					o.exitCode, out, o.startErr, tc.exit, tc.out, tc.startErr)
			}
		})
	}
}

// TestOpenLog: a log file is created 0600 with its directory when missing,
// and an existing one is appended to, never truncated (SPEC §3: logs are
// never overwritten); the file reads back what was written.
func TestOpenLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "s", "attempt-1.out")
	f, newDir, err := openLog(path)
	if err != nil || !newDir {
		t.Fatalf("first open: new dir %v, %v", newDir, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	f.WriteString("one\n")
	f.Close()
	f, newDir, err = openLog(path)
	if err != nil || newDir {
		t.Fatalf("second open: new dir %v, %v", newDir, err)
	}
	defer f.Close()
	f.WriteString("two\n")
	buf := make([]byte, 16)
	n, _ := f.ReadAt(buf, 0)
	if got := string(buf[:n]); got != "one\ntwo\n" {
		t.Fatalf("log holds %q, want both writes in order", got)
	}
	if _, _, err := openLog(filepath.Join(path, "x")); err == nil {
		t.Fatal("a log under a regular file opened")
	}
}

// TestResultFilePrivate: a result file the step wrote with its own umask
// (written in place, or moved there) is 0600 once the attempt ends, and
// still read; a symlink there is read through but its target keeps its
// mode; a FIFO there is no result and does not block the attempt's end.
func TestResultFilePrivate(t *testing.T) {
	const ok = `{"status":"failure","message":"told"}`
	for _, tc := range []struct {
		name, script string
		want         string // the message read
	}{
		{"written", `umask 022; echo '` + ok + `' > "$R"`, "told"},
		{"moved", `umask 022; echo '` + ok + `' > "$R.tmp"; mv "$R.tmp" "$R"`, "told"},
		{"symlink", `echo '` + ok + `' > "$T"; chmod 644 "$T"; ln -s "$T" "$R"`, "told"},
		{"fifo", `mkfifo -m 644 "$R"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			result := filepath.Join(dir, "logs", "s", "attempt-1.result.json")
			target := filepath.Join(dir, "elsewhere.json")
			ps := procSpec{
				argv:       []string{"/bin/sh", "-c", tc.script},
				dir:        dir,
				env:        append(os.Environ(), "R="+result, "T="+target),
				stdoutPath: filepath.Join(dir, "logs", "s", "attempt-1.out"),
				stderrPath: filepath.Join(dir, "logs", "s", "attempt-1.err"),
				resultPath: result,
				timeout:    time.Minute,
			}
			done := make(chan outcome, 1)
			go func() { done <- runProc(ps, newCtrl()) }()
			var o outcome
			select {
			case o = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the attempt did not end: faber blocks reading its result file")
			}
			if o.exitCode != 0 || o.resultMessage != tc.want {
				t.Fatalf("exit %d, result message %q; want 0, %q", o.exitCode, o.resultMessage, tc.want)
			}
			fi, err := os.Lstat(result)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.name {
			case "symlink":
				if tfi, err := os.Stat(target); err != nil || tfi.Mode().Perm() != 0o644 {
					t.Fatalf("the symlink's target: %v %v; want it left 0644", tfi.Mode(), err)
				}
			case "fifo":
			default:
				if fi.Mode().Perm() != 0o600 {
					t.Fatalf("result file mode %v, want 0600", fi.Mode().Perm())
				}
			}
		})
	}
}
