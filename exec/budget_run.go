package exec

import (
	"github.com/faber-run/faber/spec"
)

// What an agent run for the run as a whole spends (faber recover, README
// "pending_failed, classify, MCP, recover"): it reports it in its
// $FABER_RESULT as a step's process does, and it counts toward the plan's
// budget, as RunState.Spent, recorded by an agent_spent event.

// ReadSpent reads what a process reported spending in the result file at
// path (cost_usd, turns, tokens), as a step's result file is read: no
// file, or a file that is not such JSON, is nothing spent; a field of
// another kind is left out and named in bad.
func ReadSpent(path string) (sp Spent, bad string) {
	_, _, sp, bad = readResult(path)
	sp.Attempts = 0
	return sp, bad
}

// SpendOnRun adds sp to what the run's agents spent (run.Spent) and
// returns the agent_spent event that records it, to be stamped and
// committed with run.
func SpendOnRun(run *RunState, sp Spent) Event {
	if run.Spent == nil {
		run.Spent = &Spent{}
	}
	run.Spent.add(Spent{CostUSD: sp.CostUSD, Turns: sp.Turns, Tokens: sp.Tokens})
	return Event{Type: EvAgentSpent, Data: &AgentSpent{CostUSD: sp.CostUSD, Turns: sp.Turns, Tokens: sp.Tokens}}
}

// PlanBudgetReached says which limit of the plan's budget the run has
// reached (its steps' and its agents' spending together), "" while none
// is or the plan has no budget.
func PlanBudgetReached(p *spec.Plan, run *RunState, steps []*StepState) string {
	for _, l := range Budgets(p, run, steps) {
		if l.Scope == "plan" {
			return l.Reached
		}
	}
	return ""
}

// FailedOnBudget reports whether st's last attempt ended for a spent
// budget (cause budget): a retry of it spends more, which is a person's
// decision, not an agent's.
func FailedOnBudget(st *StepState) bool {
	if len(st.Attempts) == 0 {
		return false
	}
	a := st.Attempts[len(st.Attempts)-1]
	return a != nil && a.Cause == spec.CauseBudget
}
