package run

import (
	"bytes"
	"fmt"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// What readers show of a run's budgets (README "Budgets"): the budget
// lines of its plan (exec.Budgets) need the plan, which only the run's
// stored copy holds; a run whose plan sets no budget shows none, and costs
// no parse of it.

// budgetPlan is the run's stored plan when it sets a budget, else nil (or
// when it cannot be read back). A plan whose text never says budget is not
// parsed: it sets none.
func budgetPlan(stateDir, runID string) *spec.Plan {
	data, err := state.ReadPlan(stateDir, runID)
	if err != nil || !bytes.Contains(data, []byte("budget")) {
		return nil
	}
	meta, err := state.ReadMeta(stateDir, runID)
	if err != nil {
		return nil
	}
	p := StoredPlan(stateDir, runID, meta)
	if p == nil || !p.SetsBudget() {
		return nil
	}
	return p
}

// Budgets are the budgets of a run with what its steps spent (exec.Budgets)
// from v, a whole view of it (Load: not LoadBrief's, which keeps no
// spending); nil when its plan sets none.
func Budgets(stateDir, runID string, v *exec.View) []exec.BudgetLine {
	p := budgetPlan(stateDir, runID)
	if p == nil || v == nil {
		return nil
	}
	return exec.Budgets(p, &v.Run, v.Steps)
}

// BudgetsOfRun is Budgets of the run as Load rebuilds it; nil when its plan
// sets none (then nothing else is read).
func BudgetsOfRun(stateDir, runID string) []exec.BudgetLine {
	p := budgetPlan(stateDir, runID)
	if p == nil {
		return nil
	}
	v, err := View(stateDir, runID)
	if err != nil {
		return nil
	}
	return exec.Budgets(p, &v.Run, v.Steps)
}

// WithBudgets is the status JSON b (Status or LiveStatus, unindented) with
// "budgets": lines right before its steps; b itself when lines is empty.
func WithBudgets(b []byte, lines []exec.BudgetLine) []byte {
	if len(lines) == 0 {
		return b
	}
	if out, ok := beforeSteps(b, "budgets", lines); ok {
		return out
	}
	return b
}

// BudgetsCovering are the lines of lines that cover step st: the plan's,
// its phase's and its own (a fan-out item's own line is the item's).
func BudgetsCovering(lines []exec.BudgetLine, st *exec.StepState) []exec.BudgetLine {
	var out []exec.BudgetLine
	for _, l := range lines {
		switch {
		case l.Scope == "plan" && st.ID != "end",
			l.Scope == "phase" && l.Name == st.Phase && st.ID != "end",
			l.Scope == "step" && l.Name == st.ID:
			out = append(out, l)
		}
	}
	return out
}

// BudgetText is a budget line as the plain readers print it: its label,
// its spending against its limits, and SPENT (which limit) once reached.
func BudgetText(l exec.BudgetLine) string {
	t := l.Label() + ": " + l.Text()
	if l.Reached != "" {
		t += " — SPENT (" + l.Reached + ")"
	}
	return t
}

// budgetHint is the hint of a step that a spent budget failed: spending
// more is a person's decision.
func budgetHint(runID, stepID string) string {
	return fmt.Sprintf("its budget is spent: faber classify %s %s --retry spends more (a person's decision: it starts once whatever its budget); faber recover leaves it to a person",
		runID, stepID)
}

// addBudgets gives the pending steps that a spent budget failed (cause
// budget) the budget lines that cover them and the hint that says how to
// spend more; the run's budgets are read only when there is one.
func addBudgets(stateDir, runID string, v *exec.View, ps []PendingStep) {
	var lines []exec.BudgetLine
	read := false
	for i := range ps {
		p := &ps[i]
		if p.Cause != spec.CauseBudget {
			continue
		}
		if !read {
			lines, read = Budgets(stateDir, runID, v), true
		}
		for _, st := range v.Steps {
			if st.ID == p.StepID {
				p.Budgets = BudgetsCovering(lines, st)
				break
			}
		}
		p.Hint = budgetHint(runID, p.StepID)
	}
}

// topKey is where key (`,"name":`) starts in the unindented JSON object b
// as a key of b itself (not of an object inside it, not in a string); -1
// when it is not one. It reads only as far as the key.
func topKey(b []byte, key string) int {
	depth, inStr := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ',' && depth == 1 && bytes.HasPrefix(b[i:], []byte(key)):
			return i
		}
	}
	return -1
}
