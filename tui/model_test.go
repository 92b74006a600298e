package tui

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/evtest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable time source for the model.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestModel(t *testing.T, steps ...StepDef) (*Model, *clock) {
	t.Helper()
	c := &clock{t: t0}
	m := NewModel(Options{Plan: "demo", RunID: "demo-20260102T030405-abcd", Steps: steps, Styles: NewStyles(false), Now: c.now})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return m, c
}

func defs(phase string, ids ...string) []StepDef {
	out := make([]StepDef, len(ids))
	for i, id := range ids {
		out[i] = StepDef{ID: id, Name: id, Phase: phase}
	}
	return out
}

func status(step, st string, attempt int, fields map[string]any) exec.Event {
	if fields == nil {
		fields = map[string]any{}
	}
	return evtest.Typed(exec.Event{Type: exec.EvStepStatus, StepID: step, Status: st, Attempt: attempt, Time: t0}, fields)
}

func line(step, stream, text string) exec.Event {
	return evtest.Typed(exec.Event{Type: exec.EvStepOutput, StepID: step, Attempt: 1, Line: []byte(text)}, map[string]any{"stream": stream, "kind": "attempt"})
}

func feed(m *Model, evs ...exec.Event) { m.Update(eventsMsg{events: evs}) }

func key(m *Model, k string) tea.Cmd {
	var msg tea.KeyMsg
	switch k {
	case "up":
		msg = tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		msg = tea.KeyMsg{Type: tea.KeyDown}
	case "enter":
		msg = tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		msg = tea.KeyMsg{Type: tea.KeyEsc}
	case "ctrl+c":
		msg = tea.KeyMsg{Type: tea.KeyCtrlC}
	case "pgup":
		msg = tea.KeyMsg{Type: tea.KeyPgUp}
	default:
		msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
	}
	_, cmd := m.Update(msg)
	return cmd
}

// rowOf returns the screen line that shows step id in the list.
func rowOf(t *testing.T, view, id string) string {
	t.Helper()
	for _, l := range strings.Split(view, "\n") {
		f := strings.Fields(l)
		for i, w := range f {
			if w == id && i <= 2 {
				return l
			}
		}
	}
	t.Fatalf("no row for %q in view:\n%s", id, view)
	return ""
}

func checkSize(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Errorf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			t.Errorf("line %d is %d wide (> %d): %q", i, ansi.StringWidth(l), w, l)
		}
	}
}

func TestViewShowsEveryStatus(t *testing.T) {
	all := []string{exec.StatusPending, exec.StatusInProgress, exec.StatusSuccess, exec.StatusFailure,
		exec.StatusRemediating, exec.StatusRetrying, exec.StatusRemediationFailed, exec.StatusPendingFailed,
		exec.StatusCanceled, exec.StatusInterrupted, exec.StatusSkipped}
	var steps []StepDef
	for _, st := range all {
		steps = append(steps, StepDef{ID: "s-" + st, Phase: "build", Handler: "/faber:debug --problem {error}"})
	}
	m, c := newTestModel(t, steps...)
	for _, st := range all[1:] {
		f := map[string]any{"started_at": t0.Format(time.RFC3339Nano)}
		if st != exec.StatusInProgress && st != exec.StatusRemediating && st != exec.StatusRetrying {
			f["duration_ms"] = int64(1500)
		}
		if st == exec.StatusFailure || st == exec.StatusPendingFailed || st == exec.StatusRemediationFailed {
			f["error"] = "boom in " + st
		}
		feed(m, status("s-"+st, st, 2, f))
	}
	c.t = t0.Add(3 * time.Second)
	v := m.View()
	checkSize(t, v, 120, 40)
	glyphs := map[string]string{
		exec.StatusPending: "·", exec.StatusSuccess: "✓", exec.StatusFailure: "✗", exec.StatusRetrying: "↻",
		exec.StatusRemediationFailed: "✗", exec.StatusPendingFailed: "?", exec.StatusCanceled: "⊘", exec.StatusInterrupted: "■", exec.StatusSkipped: "↷",
		exec.StatusInProgress: spinnerFrames[0], exec.StatusRemediating: spinnerFrames[0],
	}
	for _, st := range all {
		row := rowOf(t, v, "s-"+st)
		if !strings.Contains(row, " "+st+" ") {
			t.Errorf("row of %s lacks its status word: %q", st, row)
		}
		if !strings.Contains(row, glyphs[st]+" s-"+st) {
			t.Errorf("row of %s lacks glyph %q: %q", st, glyphs[st], row)
		}
		if st != exec.StatusPending && !strings.Contains(row, "#2") {
			t.Errorf("row of %s lacks the attempt: %q", st, row)
		}
	}
	if row := rowOf(t, v, "s-"+exec.StatusSuccess); !strings.Contains(row, "1.5s") {
		t.Errorf("finished step lacks its duration: %q", row)
	}
	if row := rowOf(t, v, "s-"+exec.StatusInProgress); !strings.Contains(row, "3.0s") {
		t.Errorf("running step lacks its live duration: %q", row)
	}
	if row := rowOf(t, v, "s-"+exec.StatusRemediating); !strings.Contains(row, "on_failure: /faber:debug --problem {error}") {
		t.Errorf("remediating row lacks the handler command: %q", row)
	}
	if row := rowOf(t, v, "s-"+exec.StatusPendingFailed); !strings.Contains(row, "awaiting decision: r retry · x x fail") || !strings.Contains(row, "boom in pend") {
		t.Errorf("pending_failed row does not stand out: %q", row)
	}
	if row := rowOf(t, v, "s-"+exec.StatusFailure); !strings.Contains(row, "boom in failure") {
		t.Errorf("failed row lacks its error: %q", row)
	}
	for _, want := range []string{"demo", "demo-20260102T030405-abcd", "7/11", "1 success", "1 skipped", "3 running", "2 failed", "1 pending_failed", "1 canceled", "1 interrupted", "1 pending", "build  7/11 2 failed"} {
		if !strings.Contains(v, want) {
			t.Errorf("header lacks %q:\n%s", want, v)
		}
	}
}

func TestRetryBudgetAndHandlerCommand(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "flaky")...)
	feed(m, status("flaky", exec.StatusInProgress, 1, nil),
		evtest.Typed(exec.Event{Type: exec.EvRetryReserved, StepID: "flaky", Attempt: 2}, map[string]any{"retry_count": 1, "max_retries": 3, "failure_handler": "transient", "delay_ms": int64(2000)}),
		status("flaky", exec.StatusRetrying, 2, map[string]any{"error": "exit status 10"}))
	row := rowOf(t, m.View(), "flaky")
	if !strings.Contains(row, "#2 retry 1/3") || !strings.Contains(row, "waiting to retry") {
		t.Errorf("retrying row lacks attempt and budget: %q", row)
	}
	feed(m, status("flaky", exec.StatusRemediating, 3, map[string]any{"handler_command": "./fix.sh --id 7"}))
	if row := rowOf(t, m.View(), "flaky"); !strings.Contains(row, "on_failure: ./fix.sh --id 7") {
		t.Errorf("remediating row lacks the exact handler command: %q", row)
	}
	feed(m, evtest.Typed(exec.Event{Type: exec.EvHandlerInvoked, StepID: "flaky", Attempt: 3}, map[string]any{
		"handler_command": "./fix.sh --id 7", "retry_count": 1, "max_retries": 1,
		"handler_result": &exec.HandlerResult{Status: "failure", Message: "could not fix", ExitCode: 2, ActionTaken: "stop"}}),
		status("flaky", exec.StatusRemediationFailed, 3, map[string]any{"error": "exit status 10", "duration_ms": int64(10)}))
	v := m.View()
	if row := rowOf(t, v, "flaky"); !strings.Contains(row, "exit status 10") || !strings.Contains(row, "retry 1/1") {
		t.Errorf("remediation_failed row: %q", row)
	}
	for _, want := range []string{"retry 1/3 reserved by failure handler transient, after 2.0s", "on_failure failure: could not fix"} {
		if !strings.Contains(v, want) {
			t.Errorf("log pane lacks %q:\n%s", want, v)
		}
	}
}

func TestResize(t *testing.T) {
	m, _ := newTestModel(t, append(defs("one", "alpha", "beta"), defs("two", "gamma-with-a-very-long-step-identifier-that-does-not-fit")...)...)
	feed(m, status("alpha", exec.StatusInProgress, 1, nil), line("alpha", "stdout", strings.Repeat("x", 300)))
	for _, sz := range [][2]int{{120, 40}, {60, 15}, {40, 8}, {200, 60}, {20, 5}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		checkSize(t, m.View(), sz[0], sz[1])
	}
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 15})
	v := m.View()
	if !strings.Contains(v, "alpha") || !strings.Contains(v, "xxxx") {
		t.Errorf("small window lost the list or the log:\n%s", v)
	}
}

func TestSelectionAndLogPane(t *testing.T) {
	m, _ := newTestModel(t, append(defs("one", "a", "b"), defs("two", "c")...)...)
	feed(m, status("a", exec.StatusInProgress, 1, nil), line("a", "stdout", "hello from a"), line("a", "stderr", "warning from a"))
	v := m.View()
	if !strings.Contains(v, "│ hello from a") || !strings.Contains(v, "! warning from a") {
		t.Fatalf("log pane of the running step:\n%s", v)
	}
	if !strings.Contains(v, "── a · attempt 1 · in_progress") || !strings.Contains(v, "following") {
		t.Errorf("log pane title:\n%s", v)
	}
	if !strings.Contains(rowOf(t, v, "a"), "›") {
		t.Errorf("the running step is not selected (follow):\n%s", v)
	}
	// Follow moves to the next running step.
	feed(m, status("a", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(5)}),
		status("b", exec.StatusInProgress, 1, nil), line("b", "stdout", "b says hi"))
	v = m.View()
	if !strings.Contains(rowOf(t, v, "b"), "›") || !strings.Contains(v, "│ b says hi") || strings.Contains(v, "hello from a") {
		t.Errorf("follow did not move to b:\n%s", v)
	}
	// Selecting by hand stops following.
	key(m, "up")
	v = m.View()
	if !strings.Contains(rowOf(t, v, "a"), "›") || !strings.Contains(v, "│ hello from a") {
		t.Errorf("up did not select a:\n%s", v)
	}
	feed(m, status("b", exec.StatusSuccess, 1, nil), status("c", exec.StatusInProgress, 1, nil))
	if !strings.Contains(rowOf(t, m.View(), "a"), "›") {
		t.Errorf("selection jumped although follow is off")
	}
	key(m, "j")
	key(m, "j")
	key(m, "j") // past the end: stays on the last step
	if v := m.View(); !strings.Contains(rowOf(t, v, "c"), "›") || !strings.Contains(v, "(no output yet)") {
		t.Errorf("j did not select c:\n%s", v)
	}
	key(m, "k")
	key(m, "f") // track again: back on the running step c
	if v := m.View(); !strings.Contains(rowOf(t, v, "c"), "›") || !strings.Contains(v, "tracking the running step") {
		t.Errorf("f did not track c:\n%s", v)
	}
}

func TestLogTailIsBoundedAndFullView(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "chatty")...)
	feed(m, status("chatty", exec.StatusInProgress, 1, nil))
	var evs []exec.Event
	for i := 1; i <= 1200; i++ {
		evs = append(evs, line("chatty", "stdout", fmt.Sprintf("line %d", i)))
	}
	feed(m, evs...)
	r := m.byID["chatty"]
	if r.log.len() != logLinesPerStep || r.log.total != 1200 {
		t.Fatalf("ring keeps %d of %d lines, want %d", r.log.len(), r.log.total, logLinesPerStep)
	}
	v := m.View()
	if !strings.Contains(v, "│ line 1200") || !strings.Contains(v, "last 500 of 1200 lines") {
		t.Errorf("split view does not end with the newest line:\n%s", v)
	}
	key(m, "enter")
	v = m.View()
	checkSize(t, v, 120, 40)
	n := strings.Count(v, "│ line ")
	if n != 36 || !strings.Contains(v, "│ line 1200") || !strings.Contains(v, "│ line 1165") {
		t.Errorf("full view shows %d log lines, want 36 ending at 1200:\n%s", n, v)
	}
	key(m, "pgup")
	v = m.View()
	if strings.Contains(v, "│ line 1200") || !strings.Contains(v, "lines 429–464 of 500 kept") {
		t.Errorf("pgup did not scroll back:\n%s", v)
	}
	// New lines do not move what is being read; end follows again.
	feed(m, line("chatty", "stdout", "line 1201"))
	if v2 := m.View(); !strings.Contains(v2, "│ line 1129") {
		t.Errorf("reading position moved on new output:\n%s", v2)
	}
	key(m, "G")
	if v := m.View(); !strings.Contains(v, "│ line 1201") {
		t.Errorf("G did not follow the newest line:\n%s", v)
	}
	key(m, "enter")
	if v := m.View(); !strings.Contains(v, "main  0/1") || !strings.Contains(rowOf(t, v, "chatty"), "│ line 1201") {
		t.Errorf("enter did not go back to the split view:\n%s", v)
	}
}

func TestLargePlanScrolls(t *testing.T) {
	var steps []StepDef
	for p := 0; p < 4; p++ {
		for i := 0; i < 500; i++ {
			steps = append(steps, StepDef{ID: fmt.Sprintf("p%d-step-%03d", p, i), Phase: fmt.Sprintf("phase-%d", p)})
		}
	}
	m, _ := newTestModel(t, steps...)
	v := m.View()
	checkSize(t, v, 120, 40)
	if !strings.Contains(v, "p0-step-000") || !strings.Contains(v, "more") || strings.Contains(v, "p3-step-499") {
		t.Errorf("top of a large plan:\n%s", v)
	}
	key(m, "G")
	v = m.View()
	checkSize(t, v, 120, 40)
	if !strings.Contains(rowOf(t, v, "p3-step-499"), "›") || !strings.Contains(v, "↑ ") {
		t.Errorf("end of a large plan:\n%s", v)
	}
	// A step starting far down is followed into view.
	key(m, "f")
	feed(m, status("p2-step-250", exec.StatusInProgress, 1, nil))
	v = m.View()
	if !strings.Contains(rowOf(t, v, "p2-step-250"), "›") || !strings.Contains(v, "↑ ") || !strings.Contains(v, "↓ ") {
		t.Errorf("middle of a large plan:\n%s", v)
	}
}

func TestInterruptKeys(t *testing.T) {
	var got []bool
	m := NewModel(Options{RunID: "r1", Steps: defs("main", "a"), Styles: NewStyles(false), OnInterrupt: func(hard bool) { got = append(got, hard) }})
	key(m, "ctrl+c")
	if v := m.View(); !strings.Contains(v, "interrupting") {
		t.Errorf("no interrupting state:\n%s", v)
	}
	key(m, "ctrl+c")
	if fmt.Sprint(got) != "[false true]" {
		t.Errorf("interrupts = %v, want [false true]", got)
	}
	if v := m.View(); !strings.Contains(v, "killing") {
		t.Errorf("no killing state:\n%s", v)
	}
	if cmd := key(m, "ctrl+c"); cmd == nil || fmt.Sprintf("%T", cmd()) != "tea.QuitMsg" {
		t.Errorf("a third ctrl+c does not leave the live view")
	}
	if fmt.Sprint(got) != "[false true]" {
		t.Errorf("interrupts after a third ctrl+c = %v", got)
	}
}

// TestDetachKey: q leaves the view and never interrupts the run; in a view
// of another process's run (attach), Ctrl-C only leaves too.
func TestDetachKey(t *testing.T) {
	var got []bool
	m := NewModel(Options{RunID: "r1", Steps: defs("main", "a"), Styles: NewStyles(false), OnInterrupt: func(hard bool) { got = append(got, hard) }})
	if cmd := key(m, "q"); cmd == nil || fmt.Sprintf("%T", cmd()) != "tea.QuitMsg" || !m.Detached() {
		t.Errorf("q does not leave the live view")
	}
	if len(got) != 0 {
		t.Errorf("q interrupted the run: %v", got)
	}
	a := NewModel(Options{RunID: "r1", Steps: defs("main", "a"), Styles: NewStyles(false), Attached: true, OnInterrupt: func(hard bool) { got = append(got, hard) }})
	if cmd := key(a, "ctrl+c"); cmd == nil || fmt.Sprintf("%T", cmd()) != "tea.QuitMsg" || len(got) != 0 {
		t.Errorf("ctrl+c in an attached view: interrupts %v, want it to leave only", got)
	}
}

func TestClassifyKeys(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a", "b")...)
	feed(m, status("a", exec.StatusPendingFailed, 1, map[string]any{"error": "exit status 7"}))
	key(m, "j")
	key(m, "r")
	if v := m.View(); !strings.Contains(v, "r / x classify a pending_failed step") {
		t.Errorf("r on a step that is not pending_failed:\n%s", v)
	}
	key(m, "esc")
	key(m, "k")
	if v := m.View(); !strings.Contains(v, "r retry · x x fail · ↑/↓ select") {
		t.Errorf("footer lacks r/x on a pending_failed step:\n%s", v)
	}
	key(m, "x")
	v := m.View()
	if !strings.Contains(v, "classify with: faber classify demo-20260102T030405-abcd a --retry|--fail") {
		t.Errorf("no classify hint without a callback:\n%s", v)
	}

	var calls []string
	m2 := NewModel(Options{RunID: "r1", Steps: defs("main", "a"), Styles: NewStyles(false),
		OnClassify: func(id string, retry bool) error { calls = append(calls, fmt.Sprintf("%s %v", id, retry)); return nil }})
	feed(m2, status("a", exec.StatusPendingFailed, 1, nil))
	cmd := key(m2, "r")
	if cmd == nil {
		t.Fatal("r with a callback returned no command")
	}
	m2.Update(cmd())
	if fmt.Sprint(calls) != "[a true]" || !strings.Contains(m2.View(), "a classified retry: it runs again") {
		t.Errorf("calls = %v, view:\n%s", calls, m2.View())
	}
}

// TestClassifyKeysCallback: r classifies the selected pending_failed step at
// once; x asks first and classifies only when the next key is x on the same
// step; once the run has ended, r / x only say how to do it.
func TestClassifyKeysCallback(t *testing.T) {
	var calls []string
	m := NewModel(Options{RunID: "r1", Steps: defs("main", "a", "b", "c"), Styles: NewStyles(false),
		OnClassify: func(id string, retry bool) error { calls = append(calls, fmt.Sprintf("%s %v", id, retry)); return nil }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	feed(m, status("a", exec.StatusPendingFailed, 1, nil), status("b", exec.StatusPendingFailed, 1, nil),
		status("c", exec.StatusInProgress, 1, nil))
	run := func(cmd tea.Cmd) {
		t.Helper()
		if cmd == nil {
			t.Fatal("no command: the key did not classify")
		}
		m.Update(cmd())
	}

	key(m, "g") // a
	run(key(m, "r"))
	if fmt.Sprint(calls) != "[a true]" {
		t.Fatalf("r on a: calls = %v", calls)
	}

	key(m, "j") // b
	if cmd := key(m, "x"); cmd != nil {
		t.Fatal("a single x classified")
	}
	if v := m.View(); !strings.Contains(v, "x again to fail b and cancel its dependents") {
		t.Errorf("x did not ask for confirmation:\n%s", v)
	}
	key(m, "f") // any other key: no longer armed
	key(m, "g")
	key(m, "j")
	if cmd := key(m, "x"); cmd != nil {
		t.Fatal("x after another key classified")
	}
	key(m, "k") // a: the armed x was for b
	if cmd := key(m, "x"); cmd != nil {
		t.Fatal("x on another step than the one asked about classified")
	}
	key(m, "j")
	key(m, "x")
	run(key(m, "x"))
	if fmt.Sprint(calls) != "[a true b false]" {
		t.Fatalf("x x on b: calls = %v", calls)
	}
	if v := m.View(); !strings.Contains(v, "b classified fail: what depends on it is canceled") {
		t.Errorf("no confirmation of the fail:\n%s", v)
	}

	feed(m, exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunPendingFailed, Time: t0})
	key(m, "k")
	if cmd := key(m, "r"); cmd != nil {
		t.Error("r after the run ended called the callback")
	}
	if v := m.View(); !strings.Contains(v, "classify with: faber classify r1 a --retry|--fail, then faber resume r1") {
		t.Errorf("no hint after the run ended:\n%s", v)
	}
	if fmt.Sprint(calls) != "[a true b false]" {
		t.Errorf("calls = %v", calls)
	}
}

func TestHelpView(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a")...)
	key(m, "?")
	v := m.View()
	checkSize(t, v, 120, 40)
	for _, want := range []string{"keys", "full-height log", "interrupt (twice: kill now)", "pending_failed", "retry pending_failed"} {
		if !strings.Contains(v, want) {
			t.Errorf("help lacks %q:\n%s", want, v)
		}
	}
	key(m, "?")
	if strings.Contains(m.View(), "full-height log") {
		t.Error("? did not close the help")
	}
}

func TestSummary(t *testing.T) {
	m, _ := newTestModel(t, append(defs("build", "fetch", "compile"), defs("ship", "deploy", "notify")...)...)
	m.opt.ResumeHint = true
	feed(m,
		status("fetch", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(1200)}),
		status("compile", exec.StatusSuccess, 2, map[string]any{"duration_ms": int64(300)}),
		evtest.Typed(exec.Event{Type: exec.EvStepStatus, StepID: "deploy", Status: exec.StatusFailure, Attempt: 1, ExitCode: intp(3)}, map[string]any{"error": "connection refused", "duration_ms": int64(50)}),
		status("notify", exec.StatusCanceled, 0, nil),
		evtest.Typed(exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunFailed, Time: t0.Add(4 * time.Second)}, map[string]any{"failed_steps": []string{"deploy"}, "total_steps": 4, "failed_steps_count": 1}))
	s := m.Summary()
	for _, want := range []string{
		"✗ faber demo demo-20260102T030405-abcd failed in 4.0s",
		"STEP", "ATTEMPTS", "DURATION",
		"✓ fetch", "success", "1.2s",
		"✗ deploy",
		"failed steps:",
		"deploy failure: exit 3: connection refused",
		"logs: faber logs demo-20260102T030405-abcd deploy --stderr",
		"resume with: faber resume demo-20260102T030405-abcd",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if row := rowOf(t, s, "compile"); !strings.Contains(row, "2 ") {
		t.Errorf("summary row lacks attempts: %q", row)
	}
	m.opt.ResumeHint = false
	if strings.Contains(m.Summary(), "resume with") {
		t.Error("resume hint printed although the caller prints it")
	}
}

func TestSummaryOfLargePlanListsWhatDidNotSucceed(t *testing.T) {
	var steps []StepDef
	var evs []exec.Event
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("s%03d", i)
		steps = append(steps, StepDef{ID: id, Phase: "main"})
		st := exec.StatusSuccess
		if i == 57 {
			st = exec.StatusFailure
		}
		evs = append(evs, status(id, st, 1, map[string]any{"error": "bad"}))
	}
	m, _ := newTestModel(t, steps...)
	feed(m, evs...)
	s := m.Summary()
	if !strings.Contains(s, "✗ s057") || strings.Contains(s, "✓ s010") || !strings.Contains(s, "… and 99 more steps") {
		t.Errorf("large summary:\n%s", s)
	}
}

func TestStepsFromRunStartedAndPrior(t *testing.T) {
	m := NewModel(Options{Styles: NewStyles(false)})
	feed(m, evtest.Typed(exec.Event{Type: exec.EvRunStarted, RunID: "x-1", Time: t0}, map[string]any{"plan": "x",
		"steps": []exec.StepInfo{{ID: "one", Name: "one", Phase: "p"}, {ID: "two", Name: "Second", Phase: "p"}}}))
	v := m.View()
	if !strings.Contains(v, "x · x-1") || !strings.Contains(v, "one") || !strings.Contains(v, "Second") {
		t.Errorf("steps from run_started:\n%s", v)
	}

	m2 := NewModel(Options{Steps: defs("p", "done", "todo"), Styles: NewStyles(false),
		Prior: map[string]*exec.StepState{"done": {ID: "done", Status: exec.StatusSuccess, Attempt: 1, DurationMs: 2000}}})
	v = m2.View()
	if row := rowOf(t, v, "done"); !strings.Contains(row, "success") || !strings.Contains(row, "2.0s") {
		t.Errorf("prior state not shown: %q", row)
	}
	if !strings.Contains(v, "1/2") {
		t.Errorf("progress ignores prior state:\n%s", v)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                      "plain",
		"\x1b[31mred\x1b[0m":         "red",
		"a\tb":                       "a    b",
		"bell\x07 and \rcr":          "bell and cr",
		"bad \xff utf8":              "bad \uFFFD utf8",
		"csi \u009b31m":              "csi 31m",
		"\x1b]0;title\x07after":      "after",
		"progress 50%\rprogress 60%": "progress 50%progress 60%",
	} {
		if got := sanitize([]byte(in)); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestColorStyles(t *testing.T) {
	if got := NewStyles(true).OK.Render("x"); got == "x" {
		t.Error("colour styles render no colour")
	}
	if got := NewStyles(false).Alert.Render("x"); got != "x" {
		t.Errorf("no-colour styles render %q", got)
	}
	m := NewModel(Options{Steps: defs("p", "a"), Styles: NewStyles(false)})
	feed(m, status("a", exec.StatusFailure, 1, nil))
	if strings.Contains(m.View(), "\x1b[") || strings.Contains(m.Summary(), "\x1b[") {
		t.Error("escape sequences with colour off")
	}
}

// TestRendererBatchesAndSummarizes runs the real program on a buffer: events
// go in from many goroutines, Close returns, and the summary comes last.
func TestRendererBatchesAndSummarizes(t *testing.T) {
	var out syncBuffer
	tu := New(&out, nil, Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a", "b"), Styles: NewStyles(false)})
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 2000; i++ {
				tu.Event(line("a", "stdout", "noise"))
			}
			done <- struct{}{}
		}()
	}
	tu.Event(status("a", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(10)}))
	tu.Event(evtest.Typed(exec.Event{Type: exec.EvStepStatus, StepID: "b", Status: exec.StatusFailure, Attempt: 1, ExitCode: intp(1)}, map[string]any{"error": "it broke"}))
	for g := 0; g < 4; g++ {
		<-done
	}
	tu.Event(evtest.Typed(exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunFailed}, map[string]any{"failed_steps": []string{"b"}}))
	start := time.Now()
	if err := tu.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	s := out.String()
	i := strings.LastIndex(s, "faber demo demo-1 failed")
	if i < 0 {
		t.Fatalf("no summary in output:\n%q", s)
	}
	if tail := s[i:]; !strings.Contains(tail, "b failure: exit 1: it broke") || strings.Contains(tail, "\x1b[?1049") {
		t.Errorf("summary is not last or lacks the failed step:\n%s", tail)
	}
	tu.Event(line("a", "stdout", "after close")) // must not block or panic
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func intp(n int) *int { return &n }

// BenchmarkUpdateView is a 2,000-step plan's transitions through Update, with
// a View per batch as the program does.
func BenchmarkUpdateView(b *testing.B) {
	var steps []StepDef
	for i := 0; i < 2000; i++ {
		steps = append(steps, StepDef{ID: fmt.Sprintf("step-%04d", i), Phase: fmt.Sprintf("phase-%d", i/100)})
	}
	for b.Loop() {
		m := NewModel(Options{Steps: steps, Styles: NewStyles(true)})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		batch := make([]exec.Event, 0, 300)
		for i, s := range steps {
			batch = append(batch, status(s.ID, exec.StatusInProgress, 1, nil), status(s.ID, exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(3)}))
			if len(batch) >= 300 || i == len(steps)-1 {
				m.Update(eventsMsg{events: batch})
				_ = m.View()
				batch = batch[:0]
			}
		}
	}
}

func TestNoSummaryWithoutEvents(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a")...)
	if s := m.Summary(); s != "" {
		t.Errorf("summary of a run that never started: %q", s)
	}
}

// TestLeavingTheViewFallsBackToPlain: after a third Ctrl-C the program ends
// before the run; the rest of the run shows as plain lines.
func TestLeavingTheViewFallsBackToPlain(t *testing.T) {
	var out syncBuffer
	var hard []bool
	var mu sync.Mutex
	tu := New(&out, nil, Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a"), Styles: NewStyles(false),
		OnInterrupt: func(h bool) { mu.Lock(); hard = append(hard, h); mu.Unlock() }})
	for i := 0; i < 3; i++ {
		tu.prog.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	}
	select {
	case <-tu.pumpDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the view did not end after a third ctrl+c")
	}
	tu.Event(exec.Event{Type: exec.EvStepStatus, StepID: "a", Status: exec.StatusInterrupted, Attempt: 1, Time: t0})
	if err := tu.Close(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "left the live view; plain progress follows") || !strings.Contains(s, "a interrupted") {
		t.Errorf("no plain progress after leaving the view:\n%q", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(hard) != "[false true]" {
		t.Errorf("interrupts = %v", hard)
	}
}

// TestDetachPrintsHowToComeBack: q leaves the view while the run goes on:
// a hint names attach and stop, and plain progress follows.
func TestDetachPrintsHowToComeBack(t *testing.T) {
	var out syncBuffer
	var hard []bool
	tu := New(&out, nil, Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a"), Styles: NewStyles(false),
		OnInterrupt: func(h bool) { hard = append(hard, h) }})
	tu.prog.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	select {
	case <-tu.Left():
	case <-time.After(5 * time.Second):
		t.Fatal("the view did not end after q")
	}
	<-tu.pumpDone
	tu.Event(exec.Event{Type: exec.EvStepStatus, StepID: "a", Status: exec.StatusSuccess, Attempt: 1, Time: t0})
	if err := tu.Close(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"run demo-1 goes on here", "faber attach demo-1", "faber stop demo-1", "a success"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q after q:\n%q", want, s)
		}
	}
	if len(hard) != 0 {
		t.Errorf("q interrupted the run: %v", hard)
	}
}

// childEv wraps an event of a child run as the runner delivers it: decoded
// from the child's JSON stream (so steps are []any, numbers float64).
func childEv(t *testing.T, parentStep string, c exec.Event) exec.Event {
	t.Helper()
	if c.Time.IsZero() {
		c.Time = t0
	}
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var d exec.Event
	if err := d.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return exec.Event{Type: exec.EvChildEvent, RunID: "demo-20260102T030405-abcd", StepID: parentStep, Attempt: 1, Child: &d}
}

func childStarted(run string, fields map[string]any, ids ...string) exec.Event {
	var infos []exec.StepInfo
	for _, id := range ids {
		infos = append(infos, exec.StepInfo{ID: id, Name: id, Phase: "main", Needs: []string{}})
	}
	f := map[string]any{"plan": "child", "total_steps": len(ids), "steps": infos}
	for k, v := range fields {
		f[k] = v
	}
	return evtest.Typed(exec.Event{Type: exec.EvRunStarted, RunID: run}, f)
}

func childStatus(run, step, st string, attempt int, fields map[string]any) exec.Event {
	e := status(step, st, attempt, fields)
	e.RunID = run
	return e
}

// lineIndex is the index of the first screen line containing all of want.
func lineIndex(view string, want ...string) int {
	for i, l := range strings.Split(view, "\n") {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return i
		}
	}
	return -1
}

func TestChildRunNestedUnderItsStep(t *testing.T) {
	m, c := newTestModel(t, defs("main", "prep", "sub", "report")...)
	feed(m, status("prep", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(5)}),
		status("sub", exec.StatusInProgress, 1, nil),
		childEv(t, "sub", childStarted("child-1", nil, "c1", "c2", "c3")),
		childEv(t, "sub", childStatus("child-1", "c1", exec.StatusInProgress, 1, nil)),
		childEv(t, "sub", childStatus("child-1", "c1", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(20)})),
		childEv(t, "sub", childStatus("child-1", "c2", exec.StatusInProgress, 1, map[string]any{"started_at": t0.Format(time.RFC3339Nano)})))
	c.t = t0.Add(1500 * time.Millisecond)
	v := m.View()
	checkSize(t, v, 120, 40)
	sub, title := lineIndex(v, "› ", "sub"), lineIndex(v, "↳ child run child-1", "1/3", "running")
	c1, c2, c3 := lineIndex(v, "↳ ✓ c1", "success", "#1", "20ms"), lineIndex(v, "c2", "in_progress", "1.5s"), lineIndex(v, "↳ · c3", "pending")
	report := lineIndex(v, "report")
	if sub < 0 || !(sub < title && title < c1 && c1 < c2 && c2 < c3 && c3 < report) {
		t.Fatalf("child lines not nested under sub (sub %d title %d c1 %d c2 %d c3 %d report %d):\n%s", sub, title, c1, c2, c3, report, v)
	}
	lines := strings.Split(v, "\n")
	if !strings.HasPrefix(lines[c1], "    ↳ ") || !strings.HasPrefix(lines[title], "    ↳ ") {
		t.Errorf("child lines are not indented under the step id:\n%s", v)
	}
	// The log pane of sub has a line per child event.
	if lineIndex(v, "↳", "run child-1 (plan child, 3 steps)") < report || lineIndex(v, "↳", "c1 success") < report {
		t.Errorf("log pane lacks a line for c1's success:\n%s", v)
	}

	// Nested lines are not selectable: j goes from sub to report.
	key(m, "j")
	if v := m.View(); !strings.Contains(rowOf(t, v, "report"), "›") {
		t.Errorf("j did not select the step after the nested lines:\n%s", v)
	}

	// The child run ends: its title shows the outcome.
	feed(m, childEv(t, "sub", childStatus("child-1", "c2", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(300)})),
		childEv(t, "sub", childStatus("child-1", "c3", exec.StatusFailure, 2, map[string]any{"error": "exit status 4\nmore", "duration_ms": int64(7)})),
		childEv(t, "sub", exec.Event{Type: exec.EvWorkflowFailed, RunID: "child-1", Status: exec.RunFailed}))
	v = m.View()
	if lineIndex(v, "↳ child run child-1", "3/3", "✗ failed") < 0 || lineIndex(v, "c2", "success", "300ms") < 0 ||
		lineIndex(v, "↳ ✗ c3", "failure", "#2", "7ms", "exit status 4 …") < 0 {
		t.Errorf("child outcome not shown:\n%s", v)
	}
	// Child steps are not counted in the header: they are not this run's.
	if !strings.Contains(v, "1/3") || !strings.Contains(v, "1 success  ▶ 1 running  · 1 pending") {
		t.Errorf("header counts include child steps:\n%s", v)
	}
}

func TestGrandchildNestsUnderChildStep(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "sub", "after")...)
	grand := map[string]any{"parent_run_id": "child-1", "parent_step_id": "c2"}
	feed(m, status("sub", exec.StatusInProgress, 1, nil),
		childEv(t, "sub", childStarted("child-1", nil, "c1", "c2", "c3")),
		childEv(t, "sub", childStatus("child-1", "c2", exec.StatusInProgress, 1, nil)),
		childEv(t, "sub", childStarted("gc-1", grand, "g1", "g2")),
		childEv(t, "sub", childStatus("gc-1", "g1", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(9), "parent_run_id": "child-1", "parent_step_id": "c2"})),
		// a grandchild whose parent run is unknown: under the top step
		childEv(t, "sub", childStarted("stray-1", map[string]any{"parent_run_id": "nope", "parent_step_id": "x"}, "s1")),
		exec.Event{Type: exec.EvChildEvent, StepID: "sub"},                                              // no child: ignored
		exec.Event{Type: exec.EvChildEvent, StepID: "sub", Child: &exec.Event{Type: exec.EvStepStatus}}, // no run id: ignored
	)
	v := m.View()
	checkSize(t, v, 120, 40)
	c2, gtitle, g1, c3 := lineIndex(v, "↳ ", "c2", "in_progress"), lineIndex(v, "↳ child run gc-1", "1/2"), lineIndex(v, "↳ ✓ g1", "success", "9ms"), lineIndex(v, "↳ · c3")
	stray, after := lineIndex(v, "↳ child run stray-1"), lineIndex(v, "after")
	if c2 < 0 || !(c2 < gtitle && gtitle < g1 && g1 < c3 && c3 < stray && stray < after) {
		t.Fatalf("grandchild not nested under c2 (c2 %d gc %d g1 %d c3 %d stray %d after %d):\n%s", c2, gtitle, g1, c3, stray, after, v)
	}
	lines := strings.Split(v, "\n")
	if !strings.HasPrefix(lines[g1], "      ↳ ") || !strings.HasPrefix(lines[stray], "    ↳ ") {
		t.Errorf("nesting depth not shown by the indent:\n%s", v)
	}
	if lineIndex(v, "c2 ↳", "g1 success") < 0 {
		t.Errorf("log pane lacks the grandchild's event with its path:\n%s", v)
	}
}

// TestChildLinesKeepTheViewSize: a child plan longer than the window, in
// every window size; the list scrolls over the nested lines and selection
// skips them.
func TestChildLinesKeepTheViewSize(t *testing.T) {
	m, _ := newTestModel(t, append(defs("one", "a", "sub"), defs("two", "z1", "z2", "z3")...)...)
	var ids []string
	for i := 0; i < 60; i++ {
		ids = append(ids, fmt.Sprintf("child-step-%02d", i))
	}
	evs := []exec.Event{status("sub", exec.StatusInProgress, 1, nil), childEv(t, "sub", childStarted("child-9", nil, ids...))}
	for i := 0; i < 5; i++ {
		evs = append(evs, childEv(t, "sub", childStatus("child-9", ids[i], exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(i)})))
	}
	evs = append(evs, childEv(t, "sub", childStatus("child-9", ids[5], exec.StatusInProgress, 1, nil)))
	feed(m, evs...)
	for _, sz := range [][2]int{{120, 40}, {60, 15}, {40, 8}, {200, 60}, {20, 5}, {80, 12}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		checkSize(t, m.View(), sz[0], sz[1])
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	v := m.View()
	if !strings.Contains(rowOf(t, v, "sub"), "›") || lineIndex(v, "child-step-05", "in_progress") < 0 || !strings.Contains(v, "↓ ") {
		t.Errorf("the running child step is not in view under sub:\n%s", v)
	}
	key(m, "j")
	v = m.View()
	checkSize(t, v, 120, 40)
	if !strings.Contains(rowOf(t, v, "z1"), "›") || !strings.Contains(v, "↑ ") {
		t.Errorf("j did not scroll past the nested lines to z1:\n%s", v)
	}
	key(m, "G")
	key(m, "g")
	key(m, "j")
	v = m.View()
	if !strings.Contains(rowOf(t, v, "sub"), "›") || lineIndex(v, "↳ child run child-9") < 0 {
		t.Errorf("back on sub, its child run is not in view:\n%s", v)
	}
	// The full-height log of sub shows the child's events.
	key(m, "enter")
	v = m.View()
	checkSize(t, v, 120, 40)
	if lineIndex(v, "↳", "child-step-04 success") < 0 {
		t.Errorf("full log lacks the child's events:\n%s", v)
	}
}

func TestChildRunFromPriorAndInSummary(t *testing.T) {
	m := NewModel(Options{RunID: "p-1", Steps: defs("main", "sub"), Styles: NewStyles(false), ResumeHint: true,
		Prior: map[string]*exec.StepState{"sub": {ID: "sub", Status: exec.StatusFailure, Attempt: 1, ChildRunID: "child-7"}}})
	if v := m.View(); lineIndex(v, "↳ child run child-7", "0/0") < 0 {
		t.Errorf("the child run of a resumed step is not shown:\n%s", v)
	}
	feed(m, status("sub", exec.StatusInProgress, 2, nil),
		childEv(t, "sub", evtest.Typed(exec.Event{Type: exec.EvRunResumed, RunID: "child-7"}, map[string]any{"steps": []exec.StepInfo{{ID: "k1"}, {ID: "k2"}}})),
		childEv(t, "sub", childStatus("child-7", "k1", exec.StatusSuccess, 1, nil)),
		childEv(t, "sub", evtest.Typed(exec.Event{Type: exec.EvStepStatus, RunID: "child-7", StepID: "k2", Status: exec.StatusFailure, Attempt: 1, ExitCode: intp(2)}, map[string]any{"error": "no disk"})),
		childEv(t, "sub", exec.Event{Type: exec.EvWorkflowFailed, RunID: "child-7", Status: exec.RunFailed}),
		evtest.Typed(exec.Event{Type: exec.EvStepStatus, StepID: "sub", Status: exec.StatusFailure, Attempt: 2, ExitCode: intp(1)}, map[string]any{"error": "child run failed: k2"}),
		exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunFailed, Time: t0.Add(time.Second)})
	v := m.View()
	if strings.Count(v, "↳ child run") != 1 || lineIndex(v, "↳ child run child-7", "2/2", "failed") < 0 || lineIndex(v, "k2", "exit 2: no disk") < 0 {
		t.Errorf("resumed child run:\n%s", v)
	}
	s := m.Summary()
	for _, want := range []string{"sub failure: exit 1: child run failed: k2", "↳ child-7 ✗ k2 failure: exit 2: no disk", "logs: faber logs child-7 k2 --stderr"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// TestRendererDeliversChildEvents: child events go through the renderer's
// batching like any transition and reach the final summary.
func TestRendererDeliversChildEvents(t *testing.T) {
	var out syncBuffer
	tu := New(&out, nil, Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "sub"), Styles: NewStyles(false)})
	tu.Event(status("sub", exec.StatusInProgress, 1, nil))
	for i := 0; i < 200; i++ {
		tu.Event(line("sub", "stdout", "noise"))
		tu.Event(childEv(t, "sub", childStatus("child-1", fmt.Sprintf("c%d", i), exec.StatusSuccess, 1, nil)))
	}
	tu.Event(childEv(t, "sub", childStatus("child-1", "bad", exec.StatusFailure, 1, map[string]any{"error": "broken"})))
	tu.Event(evtest.Typed(exec.Event{Type: exec.EvStepStatus, StepID: "sub", Status: exec.StatusFailure, Attempt: 1}, map[string]any{"error": "child failed"}))
	tu.Event(exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunFailed})
	if err := tu.Close(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	i := strings.LastIndex(s, "faber demo demo-1 failed")
	if i < 0 || !strings.Contains(s[i:], "↳ child-1 ✗ bad failure: broken") {
		t.Errorf("summary lacks the child's failed step:\n%s", s[max(i, 0):])
	}
}

// TestSummarySpanOfAttempts: a step fixed by a retry or a handler took from
// its first attempt's start to its last one's end (issue 34: the summary
// showed the last attempt's 7ms for a step that took 2s), and a spent
// classification no longer shows once the retried attempt runs.
func TestSummarySpanOfAttempts(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "flaky", "pend")...)
	at := func(e exec.Event, d time.Duration) exec.Event { e.Time = t0.Add(d); return e }
	feed(m,
		at(status("flaky", exec.StatusInProgress, 1, map[string]any{"started_at": t0}), 0),
		at(status("flaky", exec.StatusRemediating, 1, map[string]any{"duration_ms": int64(5)}), 5*time.Millisecond),
		at(status("flaky", exec.StatusInProgress, 2, map[string]any{"started_at": t0.Add(1993 * time.Millisecond)}), 1993*time.Millisecond),
		at(status("flaky", exec.StatusSuccess, 2, map[string]any{"duration_ms": int64(7)}), 2000*time.Millisecond),
		at(status("pend", exec.StatusInProgress, 1, map[string]any{"started_at": t0}), 0),
		at(status("pend", exec.StatusPendingFailed, 1, map[string]any{"error": "boom"}), time.Second),
		evtest.Typed(exec.Event{Type: exec.EvStepClassified, StepID: "pend", Attempt: 1}, map[string]any{"action": "retry", "reason": "try again"}),
		at(status("pend", exec.StatusInProgress, 2, map[string]any{"started_at": t0.Add(3 * time.Second)}), 3*time.Second),
		at(status("pend", exec.StatusPendingFailed, 2, map[string]any{"error": "boom again"}), 4*time.Second),
	)
	if row := rowOf(t, m.Summary(), "flaky"); !strings.Contains(row, "2.0s") || strings.Contains(row, "7ms") {
		t.Errorf("flaky's summary row shows its last attempt, not its span: %q", row)
	}
	if v := m.View(); strings.Contains(v, "classified: retry") {
		t.Errorf("a pending_failed row still says classified: retry after the retry failed again:\n%s", v)
	}
}
