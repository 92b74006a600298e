package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/evtest"
)

// TestAttachedKeysSayLeave: in a view of another process's run, the footer
// and the help screen offer q and Ctrl-C as "leave", never "interrupt".
func TestAttachedKeysSayLeave(t *testing.T) {
	m := NewModel(Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a"), Styles: NewStyles(false), Attached: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	v := m.View()
	if !strings.Contains(v, "q/ctrl+c leave") || strings.Contains(v, "interrupt") {
		t.Errorf("attached footer:\n%s", v)
	}
	key(m, "?")
	v = m.View()
	if !strings.Contains(v, "leave (the run goes on; faber stop stops it)") || strings.Contains(v, "interrupt (") {
		t.Errorf("attached help:\n%s", v)
	}
	own := NewModel(Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a"), Styles: NewStyles(false)})
	own.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	if v := own.View(); !strings.Contains(v, "ctrl+c interrupt") {
		t.Errorf("the owner's footer lost ctrl+c interrupt:\n%s", v)
	}
}

// TestLeave: Leave ends the view as q does, without a summary.
func TestLeave(t *testing.T) {
	var out syncBuffer
	tu := New(&out, nil, Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a"), Styles: NewStyles(false), Attached: true})
	tu.Event(exec.Event{Type: exec.EvStepStatus, StepID: "a", Status: exec.StatusInProgress, Attempt: 1, Time: t0})
	tu.Leave()
	select {
	case <-tu.Left():
	case <-time.After(5 * time.Second):
		t.Fatal("the view did not end after Leave")
	}
	if !tu.Detached() || tu.Err() != nil {
		t.Errorf("after Leave: detached %v, err %v", tu.Detached(), tu.Err())
	}
}

// TestSummaryOf: the summary of a run from its events alone.
func TestSummaryOf(t *testing.T) {
	exit := 2
	s := SummaryOf(Options{Plan: "demo", RunID: "demo-1", Styles: NewStyles(false), ResumeHint: true}, []exec.Event{
		evtest.Typed(exec.Event{Type: exec.EvRunStarted, RunID: "demo-1", Time: t0}, map[string]any{"plan": "demo",
			"steps": []any{map[string]any{"id": "a", "phase": "main"}, map[string]any{"id": "b", "phase": "main"}}}),
		status("a", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(1500)}),
		evtest.Typed(exec.Event{Type: exec.EvStepStatus, StepID: "b", Status: exec.StatusFailure, Attempt: 1, ExitCode: &exit, Time: t0},
			map[string]any{"error": "boom"}),
		{Type: exec.EvWorkflowFailed, RunID: "demo-1", Status: exec.RunFailed, Time: t0.Add(3 * time.Second)},
	})
	for _, want := range []string{"demo-1 failed in 3.0s", "✓ a     main   success", "b failure: exit 2: boom", "resume with: faber resume demo-1"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}
