package tui

import (
	"strings"

	"github.com/faber-run/faber/exec"
)

// Budgets in the live view (README "Budgets"): the header has a line with
// the plan's budget and its phases', spent against their limits, marked
// once one is spent; the log pane's title has the selected step's own
// budget; the log a line per attempt (and handler run) that reported what
// it spent. The view knows what each step spent from its step_status
// events (spent); the lines come from Options.Budgets, which knows the
// plan.

// spentOf keeps what step id (an item too) has spent, from a step_status
// event's or a prior record's spent.
func (m *Model) spentOf(id, phase string, sp *exec.Spent) {
	if sp == nil || m.opt.Budgets == nil {
		return
	}
	st := m.spent[id]
	if st == nil {
		st = &exec.StepState{ID: id, Phase: phase}
		if it := m.items[id]; it != nil {
			st.FanOut = it.fan
		}
		if st.Phase == "" {
			if r := m.byID[id]; r != nil {
				st.Phase = r.def.Phase
			}
		}
		m.spent[id] = st
		m.spentOrder = append(m.spentOrder, st)
	}
	c := *sp
	st.Spent = &c
	m.budgets = nil // worked out again when next shown
}

// budgetLines are the run's budget lines (Options.Budgets) from what the
// view knows the steps spent; worked out once per change.
func (m *Model) budgetLines() []exec.BudgetLine {
	if m.opt.Budgets == nil {
		return nil
	}
	if m.budgets == nil {
		m.budgets = m.opt.Budgets(m.spentOrder)
		if m.budgets == nil {
			m.budgets = []exec.BudgetLine{} // none: not asked again until a change
		}
	}
	return m.budgets
}

// budgetLine is the header's budget line: the plan's budget and each
// phase's, compactly ("budget $2.25/$5.00 · 12/20 turns   phase fix:
// 3/10 attempts"), a spent one marked ("phase fix spent 10/10 attempts"); "" when the plan sets neither or the
// window is too low to spare a line.
func (m *Model) budgetLine() string {
	if m.height < 10 {
		return ""
	}
	var parts []string
	for _, l := range m.budgetLines() {
		switch l.Scope {
		case "plan":
			parts = append(parts, m.budgetMark(l, "budget"))
		case "phase":
			parts = append(parts, m.budgetMark(l, "phase "+l.Name))
		}
	}
	return strings.Join(parts, "   ")
}

// budgetMark is budget l named name with its spending against its limits:
// dim while it lasts ("budget $0.75/$2.00"); once it is spent an error,
// marked first so that a cut line keeps it ("budget spent $2.25/$2.00").
func (m *Model) budgetMark(l exec.BudgetLine, name string) string {
	if l.Reached != "" {
		return m.st.Error.Render(name + " spent " + l.Text())
	}
	if l.Scope == "phase" {
		name += ":"
	}
	return m.st.Dim.Render(name + " " + l.Text())
}

// stepBudget is what the log pane's title says of step r's own budget
// ("budget $1.25/$2.00 · 12/20 turns", "budget spent $2.25/$2.00"); "" when it has none or has
// spent nothing yet.
func (m *Model) stepBudget(r *stepRow) string {
	for _, l := range m.budgetLines() {
		if l.Scope == "step" && l.Name == r.def.ID {
			return m.budgetMark(l, "budget")
		}
	}
	return ""
}
