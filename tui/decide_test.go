package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faber-run/faber/exec"
)

// decideModel is a view whose session waits for decisions: later counts
// the calls that end the wait, calls the classifications.
func decideModel(t *testing.T, steps ...StepDef) (m *Model, later *int, calls *[]string) {
	t.Helper()
	later, calls = new(int), new([]string)
	m = NewModel(Options{Plan: "demo", RunID: "r1", Steps: steps, Styles: NewStyles(false), WaitDecisions: true,
		OnClassify: func(id string, retry bool) error {
			*calls = append(*calls, fmt.Sprintf("%s %v", id, retry))
			return nil
		}})
	m.decideLater = func() { *later++ }
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return m, later, calls
}

// TestWaitingForADecision: once a pending_failed step is all that is left,
// the view says the run waits for a decision and selects that step; r
// classifies it; q leaves the decision for later (the session's wait ends)
// and keeps the view open until the run ends.
func TestWaitingForADecision(t *testing.T) {
	m, later, calls := decideModel(t, defs("main", "a", "b", "c")...)
	feed(m, status("a", exec.StatusInProgress, 1, nil), status("c", exec.StatusInProgress, 1, nil))
	feed(m, status("a", exec.StatusPendingFailed, 1, map[string]any{"error": "exit status 7"}))
	if v := m.View(); strings.Contains(v, "waits for a decision") {
		t.Errorf("c still runs, yet the view says the run waits:\n%s", v)
	}
	key(m, "G") // c selected by hand
	feed(m, status("c", exec.StatusSuccess, 1, nil))
	v := m.View()
	if !strings.Contains(v, "a waits for a decision: r retry · x x fail") || !strings.Contains(v, "q later") {
		t.Errorf("no decision prompt once nothing runs:\n%s", v)
	}
	if r := m.selected(); r == nil || r.def.ID != "a" {
		t.Errorf("selected %v, want a (the step that waits)", r)
	}
	if cmd := key(m, "q"); cmd != nil {
		t.Errorf("q while the run waits for a decision ended the view")
	}
	if *later != 1 || m.Detached() {
		t.Errorf("q: decideLater called %d times, detached %v", *later, m.Detached())
	}
	if v := m.View(); !strings.Contains(v, "left for later: the run ends pending_failed") || strings.Contains(v, "waits for a decision") {
		t.Errorf("after q:\n%s", v)
	}
	// Once left for later, q leaves the view as usual.
	if cmd := key(m, "q"); cmd == nil || !m.Detached() {
		t.Error("a second q did not leave the view")
	}

	m, later, calls = decideModel(t, defs("main", "a", "b")...)
	feed(m, status("a", exec.StatusPendingFailed, 1, nil))
	cmd := key(m, "r")
	if cmd == nil {
		t.Fatal("r returned no command")
	}
	m.Update(cmd())
	if fmt.Sprint(*calls) != "[a true]" || *later != 0 {
		t.Errorf("r: calls %v, later %d", *calls, *later)
	}
	feed(m, status("a", exec.StatusInProgress, 2, nil))
	if v := m.View(); strings.Contains(v, "waits for a decision") {
		t.Errorf("the retried step runs, yet the view says the run waits:\n%s", v)
	}
	feed(m, status("a", exec.StatusPendingFailed, 2, nil))
	key(m, "x")
	m.Update(key(m, "x")())
	if fmt.Sprint(*calls) != "[a true a false]" {
		t.Errorf("x x: calls %v", *calls)
	}
	if *later != 0 {
		t.Errorf("the wait ended without q")
	}
}

// TestNoWaitWithoutTheOption: a view whose session does not wait (plain
// faber attach, or no control channel) shows no prompt and q leaves it.
func TestNoWaitWithoutTheOption(t *testing.T) {
	for _, opt := range []Options{{}, {WaitDecisions: true, Attached: true}} {
		opt.RunID, opt.Steps, opt.Styles = "r1", defs("main", "a"), NewStyles(false)
		m := NewModel(opt)
		feed(m, status("a", exec.StatusPendingFailed, 1, nil))
		if v := m.View(); strings.Contains(v, "waits for a decision") {
			t.Errorf("%+v: prompt shown:\n%s", opt, v)
		}
		if cmd := key(m, "q"); cmd == nil || !m.Detached() {
			t.Errorf("%+v: q did not leave the view", opt)
		}
	}
}

// TestDecisionOnFanOutItems: r and x x on a fan-out's row classify its
// pending_failed items; the summary's classify hint names them quoted.
func TestDecisionOnFanOutItems(t *testing.T) {
	steps := []StepDef{
		{ID: "each[a.txt]", Phase: "main", FanOut: "each"}, {ID: "each[b.txt]", Phase: "main", FanOut: "each"},
		{ID: "each[c.txt]", Phase: "main", FanOut: "each"}, {ID: "each", Phase: "main"}, {ID: "after", Phase: "main"},
	}
	m, _, calls := decideModel(t, steps...)
	feed(m, status("each[a.txt]", exec.StatusSuccess, 1, nil),
		status("each[b.txt]", exec.StatusPendingFailed, 1, map[string]any{"error": "timed out"}),
		status("each[c.txt]", exec.StatusPendingFailed, 1, nil))
	v := m.View()
	if !strings.Contains(v, "2 steps wait for a decision") {
		t.Errorf("no decision prompt naming the two items:\n%s", v)
	}
	if r := m.selected(); r == nil || r.def.ID != "each" {
		t.Fatalf("selected %v, want the fan-out each", r)
	}
	if !strings.Contains(v, "r retry · x x fail") {
		t.Errorf("no decision keys on the fan-out's row:\n%s", v)
	}
	m.Update(key(m, "r")())
	if fmt.Sprint(*calls) != "[each[b.txt] true each[c.txt] true]" {
		t.Errorf("r on the fan-out: calls %v", *calls)
	}
	if v := m.View(); !strings.Contains(v, "each (2 pending_failed items) classified retry") {
		t.Errorf("no confirmation:\n%s", v)
	}
	feed(m, exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunPendingFailed, Time: t0})
	if s := m.Summary(); !strings.Contains(s, "classify with: faber classify r1 STEP --retry|--fail, for each STEP of: 'each[b.txt]' 'each[c.txt]'") {
		t.Errorf("summary lacks the items' classify hint:\n%s", s)
	}
}

// TestSummaryLogHintNamesTheFailedItem: a failed fan-out's log hint names
// its first failed item, quoted for the shell: its join step has no log.
func TestSummaryLogHintNamesTheFailedItem(t *testing.T) {
	steps := []StepDef{
		{ID: "each[a.txt]", Phase: "main", FanOut: "each"}, {ID: "each[b.txt]", Phase: "main", FanOut: "each"},
		{ID: "each[c.txt]", Phase: "main", FanOut: "each"}, {ID: "each", Phase: "main"}, {ID: "after", Phase: "main"},
	}
	m, _ := newTestModel(t, steps...)
	m.opt.ResumeHint = true
	feed(m, status("each[a.txt]", exec.StatusSuccess, 1, nil),
		status("each[c.txt]", exec.StatusFailure, 1, map[string]any{"error": "bad"}),
		status("each[b.txt]", exec.StatusFailure, 1, map[string]any{"error": "bad"}),
		status("each", exec.StatusFailure, 0, map[string]any{"error": "2 of 3 items failed"}),
		status("after", exec.StatusCanceled, 0, nil),
		exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunFailed, Time: t0})
	s := m.Summary()
	if !strings.Contains(s, "logs: faber logs demo-20260102T030405-abcd 'each[b.txt]' --stderr") {
		t.Errorf("log hint does not name the first failed item:\n%s", s)
	}
	if strings.Contains(s, "faber logs demo-20260102T030405-abcd each ") {
		t.Errorf("log hint names the join step:\n%s", s)
	}
}

// TestSummaryHintsOrder: classify comes before resume.
func TestSummaryHintsOrder(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a", "b")...)
	m.opt.ResumeHint = true
	feed(m, status("a", exec.StatusFailure, 1, map[string]any{"error": "bad"}),
		status("b", exec.StatusPendingFailed, 1, nil),
		exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunPendingFailed, Time: t0})
	s := m.Summary()
	l, c, r := strings.Index(s, "logs: faber logs"), strings.Index(s, "classify with: faber classify demo-20260102T030405-abcd b --retry|--fail"),
		strings.Index(s, "resume with: faber resume")
	if l < 0 || c < 0 || r < 0 || !(l < c && c < r) {
		t.Errorf("hints missing or out of order (logs %d, classify %d, resume %d):\n%s", l, c, r, s)
	}
}

func TestEndHints(t *testing.T) {
	st := func(id, status, fan string) *exec.StepState {
		return &exec.StepState{ID: id, Status: status, FanOut: fan}
	}
	got := EndHints("r1", []*exec.StepState{
		st("ok", exec.StatusSuccess, ""),
		st("each[x y]", exec.StatusCanceled, "each"), st("each[it's]", exec.StatusFailure, "each"), st("each[z]", exec.StatusFailure, "each"),
		st("each", exec.StatusFailure, ""),
		st("p1", exec.StatusPendingFailed, ""), st("p2", exec.StatusPendingFailed, ""),
		st("late", exec.StatusFailure, ""),
	})
	want := []string{
		`logs: faber logs r1 'each[it'\''s]' --stderr`,
		"classify with: faber classify r1 STEP --retry|--fail, for each STEP of: p1 p2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("EndHints =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A failed join with no failed item names the next failed step.
	got = EndHints("r1", []*exec.StepState{st("f[a]", exec.StatusCanceled, "f"), st("f", exec.StatusFailure, ""), st("g", exec.StatusRemediationFailed, "")})
	if fmt.Sprint(got) != "[logs: faber logs r1 g --stderr]" {
		t.Errorf("EndHints = %v", got)
	}
	var ids []string
	for i := range 7 {
		ids = append(ids, fmt.Sprintf("s%d", i))
	}
	if h := ClassifyHint("r1", ids); !strings.HasSuffix(h, "s0 s1 s2 s3 s4 … and 2 more (faber pending r1 lists them)") {
		t.Errorf("ClassifyHint = %q", h)
	}
	for in, want := range map[string]string{"build": "build", "a.b-c_d": "a.b-c_d", "each[1]": "'each[1]'", "": "''", "a b": "'a b'", "it's": `'it'\''s'`} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDecisionsClosedWhenTheViewEnds: the session waits for decisions only
// while the view is open: Decisions is closed once it has ended, and by q
// on a run that waits.
func TestDecisionsClosedWhenTheViewEnds(t *testing.T) {
	var out syncBuffer
	tu := New(&out, nil, Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a"), Styles: NewStyles(false), WaitDecisions: true})
	if tu.Decisions() == nil {
		t.Fatal("no Decisions channel with WaitDecisions")
	}
	tu.prog.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}) // nothing waits: q leaves the view
	select {
	case <-tu.Decisions():
	case <-time.After(5 * time.Second):
		t.Fatal("Decisions still open after the view ended")
	}
	tu.Close()

	tu = New(&out, nil, Options{Plan: "demo", RunID: "demo-2", Steps: defs("main", "a"), Styles: NewStyles(false), WaitDecisions: true})
	// Straight to the program, so that it has the event before the key.
	tu.prog.Send(eventsMsg{events: []exec.Event{{Type: exec.EvStepStatus, StepID: "a", Status: exec.StatusPendingFailed, Attempt: 1, Time: t0}}})
	tu.prog.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	select {
	case <-tu.Decisions():
	case <-time.After(5 * time.Second):
		t.Fatal("q on a waiting run did not end the wait")
	}
	select {
	case <-tu.Left():
		t.Error("q on a waiting run ended the view")
	case <-time.After(100 * time.Millisecond):
	}
	tu.Event(exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunPendingFailed, Time: t0})
	if err := tu.Close(); err != nil {
		t.Fatal(err)
	}
	if !tu.Summarized() || !strings.Contains(out.String(), "classify with: faber classify demo-2 a --retry|--fail") {
		t.Errorf("no summary with the classify hint:\n%q", out.String())
	}
	if New(&out, nil, Options{RunID: "x", Styles: NewStyles(false)}).Decisions() != nil {
		t.Error("Decisions without WaitDecisions")
	}
}

// TestWaitingHeader: the header says the run waits, not that it runs.
func TestWaitingHeader(t *testing.T) {
	m, _, _ := decideModel(t, defs("main", "a")...)
	feed(m, status("a", exec.StatusInProgress, 1, nil))
	if h := m.header()[0]; !strings.Contains(h, "running") {
		t.Errorf("header while a runs: %q", h)
	}
	feed(m, status("a", exec.StatusPendingFailed, 1, nil))
	if h := m.header()[0]; !strings.Contains(h, "waiting for a decision") || strings.Contains(h, "running") {
		t.Errorf("header while the run waits: %q", h)
	}
}

// TestApprovalKeys: a step at its approval gate is all that is left: the
// view says it waits and offers a / x x; a approves it at once, x asks
// first and x again rejects it.
func TestApprovalKeys(t *testing.T) {
	var calls []string
	m := NewModel(Options{Plan: "demo", RunID: "r1", Steps: defs("main", "a", "b"), Styles: NewStyles(false), WaitDecisions: true,
		OnDecide: func(id string, approve bool) error {
			calls = append(calls, fmt.Sprintf("%s %v", id, approve))
			return nil
		}})
	m.decideLater = func() {}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	feed(m, status("a", exec.StatusAwaitingApproval, 0, nil))
	v := m.View()
	if !strings.Contains(v, "a waits for a decision") || !strings.Contains(v, "a approve") || !strings.Contains(v, "awaiting approval: a approve · x x reject") {
		t.Errorf("no approval prompt:\n%s", v)
	}
	m.Update(key(m, "a")())
	if fmt.Sprint(calls) != "[a true]" {
		t.Errorf("a: calls %v", calls)
	}
	if v := m.View(); !strings.Contains(v, "a approved: it starts") {
		t.Errorf("after a:\n%s", v)
	}
	if cmd := key(m, "x"); cmd != nil || len(calls) != 1 {
		t.Errorf("a first x decided at once: %v", calls)
	}
	m.Update(key(m, "x")())
	if fmt.Sprint(calls) != "[a true a false]" {
		t.Errorf("x x: calls %v", calls)
	}
}
