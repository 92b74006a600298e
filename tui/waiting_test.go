package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
)

// waitingUsage is what an owner says of a run where big waits for memory
// and two of the fan-out's items for a pool.
func waitingUsage() *exec.Usage {
	return &exec.Usage{
		Capacity: exec.Amounts{CPUs: 4, MemoryBytes: 8 << 30, Pools: map[string]int{"db": 2}},
		InUse:    exec.Amounts{CPUs: 3, MemoryBytes: 6 << 30, Pools: map[string]int{"db": 2}},
		Waiting: []exec.WaitingStep{
			{Step: "big", Reason: "waiting: 6GiB memory, 2GiB free"},
			{Step: "work[1]", Reason: "waiting: pool db (2 of 2 in use)"},
			{Step: "work[2]", Reason: "waiting: pool db (2 of 2 in use)"},
		},
	}
}

func waitingDefs() []StepDef {
	return []StepDef{
		{ID: "a", Phase: "main"}, {ID: "big", Phase: "main"}, {ID: "small", Phase: "main"},
		{ID: "work[1]", Phase: "main", FanOut: "work"}, {ID: "work[2]", Phase: "main", FanOut: "work"},
		{ID: "work[3]", Phase: "main", FanOut: "work"}, {ID: "work", Phase: "main"},
	}
}

// TestLiveViewShowsWhyAStepWaits: with the owner's answer, a pending step
// held for resources shows why on its row, a fan-out's row how many of its
// items wait and why, and the header the capacity and what is in use; a
// step that does not wait, and the run once it ended, show nothing of it.
func TestLiveViewShowsWhyAStepWaits(t *testing.T) {
	m, _ := newTestModel(t, waitingDefs()...)
	feed(m, status("a", exec.StatusInProgress, 1, nil), status("work[3]", exec.StatusInProgress, 1, nil))
	m.Update(usageMsg{usage: waitingUsage()})
	v := m.View()
	checkSize(t, v, 120, 40)
	if row := rowOf(t, v, "big"); !strings.Contains(row, "pending") || !strings.Contains(row, "waiting: 6GiB memory, 2GiB free") {
		t.Errorf("row of big lacks why it waits: %q", row)
	}
	if row := rowOf(t, v, "work"); !strings.Contains(row, "2 items waiting: pool db (2 of 2 in use)") {
		t.Errorf("row of the fan-out lacks why its items wait: %q", row)
	}
	if row := rowOf(t, v, "small"); strings.Contains(row, "waiting") {
		t.Errorf("row of small, which does not wait: %q", row)
	}
	if lines := strings.Split(v, "\n"); lines[2] != "capacity: 4 CPUs, 8GiB; in use: 3 CPUs, 6GiB; pools db 2/2" {
		t.Errorf("third header line = %q", lines[2])
	}
	// A step that started no longer waits, whatever the last answer said.
	feed(m, status("big", exec.StatusInProgress, 1, nil))
	if row := rowOf(t, m.View(), "big"); strings.Contains(row, "waiting") {
		t.Errorf("running step still says it waits: %q", row)
	}
	// An ended run waits for nothing.
	feed(m, exec.Event{Type: exec.EvWorkflowCompleted, Status: exec.RunSuccess, Time: t0})
	if v := m.View(); strings.Contains(v, "waiting:") || strings.Contains(v, "capacity:") {
		t.Errorf("ended run still shows usage:\n%s", v)
	}
	m.Update(usageMsg{usage: waitingUsage()}) // a late answer
	if v := m.View(); strings.Contains(v, "capacity:") {
		t.Errorf("late answer shown in an ended run:\n%s", v)
	}
}

// TestLiveViewWithoutRequestsIsUnchanged: a run whose steps request nothing
// (the owner answers nil) looks exactly as it does in a view that never
// asks.
func TestLiveViewWithoutRequestsIsUnchanged(t *testing.T) {
	plain, _ := newTestModel(t, waitingDefs()...)
	m, _ := newTestModel(t, waitingDefs()...)
	m.opt.Usage = func() *exec.Usage { return nil }
	for _, mm := range []*Model{plain, m} {
		feed(mm, status("a", exec.StatusInProgress, 1, nil), status("work[3]", exec.StatusInProgress, 1, nil))
	}
	m.Update(usageMsg{usage: nil})
	if a, b := plain.View(), m.View(); a != b {
		t.Errorf("view changed:\n%s\n---\n%s", a, b)
	}
	// An answer, then none (the owner stopped saying): back to as before.
	m.Update(usageMsg{usage: waitingUsage()})
	m.Update(usageMsg{usage: nil})
	if a, b := plain.View(), m.View(); a != b {
		t.Errorf("view changed after the answers went:\n%s\n---\n%s", a, b)
	}
}

// TestLiveViewAsksOncePerSecond: the view asks the owner on a tick once a
// second at most, one question at a time, and not once the run ended; a
// view without Options.Usage never asks.
func TestLiveViewAsksOncePerSecond(t *testing.T) {
	m, c := newTestModel(t, waitingDefs()...)
	if m.askUsage() != nil {
		t.Fatal("a view without Usage asks")
	}
	calls := 0
	m.opt.Usage = func() *exec.Usage { calls++; return waitingUsage() }
	ask := m.askUsage()
	if ask == nil {
		t.Fatal("no question on the first tick")
	}
	if m.askUsage() != nil {
		t.Error("a second question while one is out")
	}
	m.Update(ask())
	if calls != 1 || m.usage == nil {
		t.Fatalf("calls = %d, usage = %v", calls, m.usage)
	}
	c.t = c.t.Add(500 * time.Millisecond)
	if m.askUsage() != nil {
		t.Error("asked again within a second")
	}
	c.t = c.t.Add(600 * time.Millisecond)
	if _, cmd := m.Update(tickMsg(c.t)); cmd == nil || !m.asking {
		t.Error("a tick a second later does not ask")
	}
	m.Update(usageMsg{usage: waitingUsage()})
	feed(m, exec.Event{Type: exec.EvWorkflowCompleted, Status: exec.RunSuccess, Time: t0})
	c.t = c.t.Add(2 * time.Second)
	if m.askUsage() != nil {
		t.Error("asked once the run ended")
	}
}
