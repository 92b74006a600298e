package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faber-run/faber/exec"
)

// The header shows Options.Estimate's ETA while the run is active, asked
// again at most once a second, with the steps as the view knows them; not
// once the run ended.
func TestHeaderETA(t *testing.T) {
	c := &clock{t: t0}
	asked := 0
	var seen []*exec.StepState
	m := NewModel(Options{Plan: "demo", RunID: "demo-1", Steps: defs("main", "a", "b"), Styles: NewStyles(false), Now: c.now,
		Estimate: func(steps []*exec.StepState, now time.Time) string {
			asked++
			seen = steps
			return "ETA ~" + (time.Minute - now.Sub(t0)).String()
		}})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	feed(m, status("a", exec.StatusInProgress, 1, map[string]any{"started_at": t0}))
	head := strings.Join(m.header(), "\n")
	if !strings.Contains(head, "ETA ~1m0s") {
		t.Errorf("header lacks the ETA:\n%s", head)
	}
	if len(seen) != 2 || seen[0].ID != "a" || seen[0].Status != exec.StatusInProgress || seen[0].StartedAt == nil || !seen[0].StartedAt.Equal(t0) || seen[1].Status != exec.StatusPending {
		t.Errorf("steps given: %+v %+v", seen[0], seen[1])
	}
	n := asked
	c.t = t0.Add(500 * time.Millisecond)
	m.header()
	if asked != n {
		t.Error("asked again within a second")
	}
	c.t = t0.Add(2 * time.Second)
	if head := strings.Join(m.header(), "\n"); !strings.Contains(head, "ETA ~58s") {
		t.Errorf("not refreshed:\n%s", head)
	}
	feed(m, exec.Event{Type: exec.EvWorkflowCompleted, Status: exec.RunSuccess, Time: t0, Data: &exec.WorkflowEnded{}})
	if head := strings.Join(m.header(), "\n"); strings.Contains(head, "ETA") {
		t.Errorf("an ended run shows an ETA:\n%s", head)
	}
}
