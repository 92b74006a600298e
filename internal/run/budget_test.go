package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

const budgetPlanText = `name: p
use_pending_failed: true
budget: {max_cost_usd: 5}
phases:
  - name: work
    budget: {max_turns: 100}
    steps:
      - id: agent
        run: "true"
        budget: {max_cost_usd: 2, max_turns: 20}
      - id: other
        run: "true"
`

// budgetRun makes a closed run of budgetPlanText whose step agent a spent
// budget failed (pending_failed, cause budget) after spending $2.25.
func budgetRun(t *testing.T, planText string) (stateDir, runID string) {
	t.Helper()
	stateDir, runID = t.TempDir(), "p-20260101T000000-b0d9"
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(planFile, []byte(planText), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := state.Create(stateDir, state.Meta{RunID: runID, Plan: "p", PlanFile: planFile}, []byte(planText), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code := 1
	spent := &exec.Spent{CostUSD: 2.25, Turns: 12, Attempts: 3}
	errText := `budget spent: step "agent" has spent $2.25 of max_cost_usd 2.00; last failure: boom`
	a := &exec.StepState{ID: "agent", Name: "agent", Phase: "work", Status: exec.StatusPendingFailed, Attempt: 3, ExitCode: &code,
		Error: errText, Needs: []string{}, Spent: spent}
	b := &exec.StepState{ID: "other", Name: "other", Phase: "work", Status: exec.StatusPending, Needs: []string{"agent"}}
	run := &exec.RunState{RunID: runID, Plan: "p", Status: exec.RunPendingFailed, StartedAt: time.Now()}
	evs := []exec.Event{
		{Type: exec.EvRunStarted, Data: &exec.RunStarted{Plan: "p"}},
		{Type: exec.EvStepStatus, StepID: "agent", Attempt: 3, Status: exec.StatusPendingFailed, ExitCode: &code, Data: &exec.StepStatus{
			Error: errText, Phase: "work", Spent: spent,
			AttemptEnd: &exec.AttemptEnd{Attempt: 3, Cause: "budget", ExitCode: new(1), Spent: &exec.Spent{CostUSD: 0.75, Turns: 4}}}},
		{Type: exec.EvWorkflowFailed, Status: exec.RunPendingFailed},
	}
	exec.Stamp(evs, 0, runID, time.Now())
	if err := (Recorder{Store: store}).Commit(run, []*exec.StepState{a, b}, evs); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return stateDir, runID
}

func TestBudgetsOfRun(t *testing.T) {
	dir, id := budgetRun(t, budgetPlanText)
	lines := BudgetsOfRun(dir, id)
	var got []string
	for _, l := range lines {
		got = append(got, BudgetText(l))
	}
	want := []string{
		"plan: $2.25/$5.00",
		`phase "work": 12/100 turns`,
		`step "agent": $2.25/$2.00 · 12/20 turns — SPENT ($2.25 of max_cost_usd 2.00)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("budgets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A plan without budget: none, and what spent shows nowhere.
	dir, id = budgetRun(t, strings.NewReplacer("budget: {max_cost_usd: 5}\n", "", "    budget: {max_turns: 100}\n", "",
		"        budget: {max_cost_usd: 2, max_turns: 20}\n", "").Replace(budgetPlanText))
	if lines := BudgetsOfRun(dir, id); lines != nil {
		t.Errorf("a plan without budget has budgets %+v", lines)
	}
	ps, err := Pending(dir, id)
	if err != nil || len(ps) != 1 || ps[0].Budgets != nil {
		t.Errorf("pending of a plan without budget = %+v, %v", ps, err)
	}
}

func TestPendingBudget(t *testing.T) {
	dir, id := budgetRun(t, budgetPlanText)
	ps, err := Pending(dir, id)
	if err != nil || len(ps) != 1 {
		t.Fatalf("Pending = %+v, %v", ps, err)
	}
	p := ps[0]
	if p.Cause != "budget" {
		t.Errorf("cause = %q, want budget", p.Cause)
	}
	if len(p.Budgets) != 3 || p.Budgets[2].Scope != "step" || p.Budgets[2].Reached == "" {
		t.Errorf("budgets = %+v, want the plan's, the phase's and the spent step's", p.Budgets)
	}
	if want := "faber classify " + id + " agent --retry spends more"; !strings.Contains(p.Hint, want) || !strings.Contains(p.Hint, "faber recover leaves it to a person") {
		t.Errorf("hint = %q, want %q and recover's part", p.Hint, want)
	}
}

func TestWithBudgets(t *testing.T) {
	lines := []exec.BudgetLine{{Scope: "plan", Spent: exec.Spent{CostUSD: 1}, MaxCostUSD: 2}}
	for _, in := range []string{
		`{"run_id":"r","status":"success","steps":[]}`,
		`{"run_id":"r","part":{"from":["x"],"steps":["a"]},"capacity":{"cpus":2},"steps":[{"id":"a","error":",\"steps\":["}]}`,
		`{"run_id":"r,\"steps\":[","steps":[]}`,
	} {
		out := WithBudgets([]byte(in), lines)
		var v struct {
			Budgets []exec.BudgetLine `json:"budgets"`
			Steps   []json.RawMessage `json:"steps"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", in, err, out)
		}
		if len(v.Budgets) != 1 || v.Budgets[0].MaxCostUSD != 2 {
			t.Errorf("%s: budgets = %+v", in, v.Budgets)
		}
		if !strings.Contains(string(out), `,"budgets":[{"scope":"plan","spent":{"cost_usd":1},"max_cost_usd":2}],"steps":[`) {
			t.Errorf("budgets not right before the steps: %s", out)
		}
		if got := WithBudgets([]byte(in), nil); string(got) != in {
			t.Errorf("no budgets changed %s into %s", in, got)
		}
	}
}

func TestBudgetsCovering(t *testing.T) {
	lines := []exec.BudgetLine{
		{Scope: "plan"}, {Scope: "phase", Name: "a"}, {Scope: "phase", Name: "b"},
		{Scope: "step", Name: "x"}, {Scope: "step", Name: "fan[1]"}, {Scope: "step", Name: "end"},
	}
	names := func(ls []exec.BudgetLine) string {
		var s []string
		for _, l := range ls {
			s = append(s, l.Label())
		}
		return strings.Join(s, ", ")
	}
	for _, c := range []struct {
		st   exec.StepState
		want string
	}{
		{exec.StepState{ID: "x", Phase: "a"}, `plan, phase "a", step "x"`},
		{exec.StepState{ID: "y", Phase: "b"}, `plan, phase "b"`},
		{exec.StepState{ID: "fan[1]", Phase: "a", FanOut: "fan"}, `plan, phase "a", step "fan[1]"`},
		{exec.StepState{ID: "end"}, `step "end"`}, // only its own
	} {
		if got := names(BudgetsCovering(lines, &c.st)); got != c.want {
			t.Errorf("%s: %s, want %s", c.st.ID, got, c.want)
		}
	}
}
