package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
)

// budgetModel is a live view of a plan with a budget on the plan ($5),
// on its phase main (20 turns) and on its step agent ($2).
func budgetModel(t *testing.T) *Model {
	t.Helper()
	plan := &spec.Plan{
		Budget: &spec.Budget{MaxCostUSD: 5},
		Phases: []*spec.Phase{{Name: "main", Budget: &spec.Budget{MaxTurns: 20}}},
		Steps: []*spec.Step{
			{ID: "agent", StepBody: &spec.StepBody{Phase: "main", Budget: &spec.Budget{MaxCostUSD: 2}}},
			{ID: "other", StepBody: &spec.StepBody{Phase: "main"}},
		},
	}
	c := &clock{t: t0}
	m := NewModel(Options{Plan: "demo", RunID: "demo-20260102T030405-abcd", Steps: defs("main", "agent", "other"),
		Styles: NewStyles(false), Now: c.now,
		Budgets: func(steps []*exec.StepState) []exec.BudgetLine { return exec.Budgets(plan, nil, steps) }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	return m
}

// attemptSpent is step agent's attempt n ending failed, having spent cost
// and turns, with what the step spent in all (total).
func attemptSpent(n int, next string, cost float64, turns int, total exec.Spent) exec.Event {
	return status("agent", next, n, map[string]any{
		"exit_code": 1, "error": "result file reported failure",
		"attempt_end": map[string]any{"attempt": n, "exit_code": 1, "spent": map[string]any{"cost_usd": cost, "turns": turns}},
		"spent":       map[string]any{"cost_usd": total.CostUSD, "turns": total.Turns, "attempts": total.Attempts},
	})
}

// TestBudgetHeaderAndStep: the header shows the plan's and the phase's
// budget, spent against their limits from the first frame; the log pane's
// title the selected step's own, once it spent something; its log what
// each attempt spent; a budget reached is marked spent.
func TestBudgetHeaderAndStep(t *testing.T) {
	m := budgetModel(t)
	header := func() string { return strings.Join(strings.Split(ansi.Strip(m.View()), "\n")[:m.headerH()], "\n") }
	if h := header(); !strings.Contains(h, "budget $0.00/$5.00   phase main: 0/20 turns") {
		t.Errorf("header before anything spent:\n%s", h)
	}
	feed(m, status("agent", exec.StatusInProgress, 1, nil),
		attemptSpent(1, exec.StatusRetrying, 0.75, 4, exec.Spent{CostUSD: 0.75, Turns: 4, Attempts: 1}))
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "budget $0.75/$5.00   phase main: 4/20 turns") || strings.Contains(header(), "spent") {
		t.Errorf("header after attempt 1:\n%s", header())
	}
	if !strings.Contains(v, "── agent · attempt 1 · retrying · budget $0.75/$2.00 ") {
		t.Errorf("the log pane's title lacks the step's budget:\n%s", v)
	}
	if !strings.Contains(v, "attempt 1 spent $0.75 · 4 turns") {
		t.Errorf("the log lacks what attempt 1 spent:\n%s", v)
	}
	feed(m, status("agent", exec.StatusInProgress, 2, nil),
		attemptSpent(2, exec.StatusRetrying, 0.75, 4, exec.Spent{CostUSD: 1.5, Turns: 8, Attempts: 2}),
		status("agent", exec.StatusInProgress, 3, nil),
		attemptSpent(3, exec.StatusPendingFailed, 0.75, 12, exec.Spent{CostUSD: 2.25, Turns: 20, Attempts: 3}))
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "budget $2.25/$5.00   phase main spent 20/20 turns") {
		t.Errorf("header once the phase's budget is spent:\n%s", header())
	}
	if !strings.Contains(v, "· budget spent $2.25/$2.00 ") {
		t.Errorf("the log pane's title does not mark the step's budget spent:\n%s", v)
	}
	// the other step spent nothing: its title says nothing of a budget
	key(m, "down")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "── other · pending ") || strings.Contains(v, "── other · pending · budget") {
		t.Errorf("the other step's title:\n%s", v)
	}

	// Narrow and low windows: every line fits; below 10 lines the budget
	// line gives way.
	for _, w := range []int{80, 60, 50, 40} {
		for _, h := range []int{20, 8} {
			m.Update(tea.WindowSizeMsg{Width: w, Height: h})
			v := m.View()
			checkSize(t, v, w, h)
			has := strings.Contains(ansi.Strip(v), "budget $2.25")
			if has != (h >= 10) {
				t.Errorf("at %dx%d the header's budget line shown: %v", w, h, has)
			}
		}
	}
}

// TestBudgetNoneNoLine: without Options.Budgets (a plan without budget)
// the header keeps its two lines and spending shows only in the log.
func TestBudgetNoneNoLine(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "agent")...)
	feed(m, status("agent", exec.StatusInProgress, 1, nil),
		attemptSpent(1, exec.StatusFailure, 0.75, 4, exec.Spent{CostUSD: 0.75, Turns: 4}))
	v := ansi.Strip(m.View())
	if m.headerH() != 2 || strings.Contains(v, "budget") {
		t.Errorf("a view without budgets shows one:\n%s", v)
	}
	if !strings.Contains(v, "attempt 1 spent $0.75 · 4 turns") {
		t.Errorf("the log lacks what attempt 1 spent:\n%s", v)
	}
}
