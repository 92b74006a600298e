package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// TestReportBudgets: a run whose agent step's attempts reported what they
// spent has its budgets in the report (JSON budgets, an HTML section with
// the one spent marked), the step's and each attempt's spending, and the
// attempt's in its bar's tooltip and the step table.
func TestReportBudgets(t *testing.T) {
	l := &runLog{t: t}
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: "p", Jobs: 1, TotalSteps: 1, Steps: []exec.StepInfo{
		{ID: "agent", Name: "agent", Phase: "main", Needs: []string{}}}})
	for n := 1; n <= 2; n++ {
		a, b := time.Duration(n)*time.Second, time.Duration(n)*time.Second+500*time.Millisecond
		status, cause := exec.StatusRetrying, ""
		if n == 2 {
			status, cause = exec.StatusFailure, "budget"
		}
		ms := int64(500)
		l.add(a, exec.EvStepStatus, "agent", n, exec.StatusInProgress, nil, &exec.StepStatus{Phase: "main", StartedAt: tp(a)})
		l.add(b, exec.EvStepStatus, "agent", n, status, intp(1), &exec.StepStatus{Phase: "main", FinishedAt: tp(b), DurationMs: &ms,
			Spent:      &exec.Spent{CostUSD: 1.5 * float64(n), Turns: 4 * int64(n), Attempts: n},
			AttemptEnd: &exec.AttemptEnd{Attempt: n, ExitCode: new(1), Cause: cause, Spent: &exec.Spent{CostUSD: 1.5, Turns: 4}}})
	}
	l.add(3*time.Second, exec.EvWorkflowFailed, "", 0, exec.RunFailed, nil, &exec.WorkflowEnded{})
	v, err := exec.Replay(l.events)
	if err != nil {
		t.Fatal(err)
	}
	lines := []exec.BudgetLine{
		{Scope: "plan", Spent: exec.Spent{CostUSD: 3, Turns: 8, Attempts: 2}, MaxCostUSD: 10},
		{Scope: "step", Name: "agent", Spent: exec.Spent{CostUSD: 3, Turns: 8, Attempts: 2}, MaxCostUSD: 2.5, Reached: "$3.00 of max_cost_usd 2.50"},
	}
	r, err := Build(Input{Meta: state.Meta{}, View: v, Events: l.events, Plan: []byte("name: p\n"), Version: "faber test", Now: t0, Budgets: lines})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	var got struct {
		Budgets []exec.BudgetLine `json:"budgets"`
		Steps   []struct {
			Spent    *exec.Spent `json:"spent"`
			Attempts []struct {
				Spent *exec.Spent `json:"spent"`
			} `json:"attempts"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Budgets) != 2 || got.Budgets[1].Reached == "" {
		t.Errorf("budgets = %+v", got.Budgets)
	}
	if s := got.Steps[0]; s.Spent == nil || s.Spent.CostUSD != 3 || len(s.Attempts) != 2 || s.Attempts[1].Spent == nil || s.Attempts[1].Spent.Turns != 4 {
		t.Errorf("step = %s", b)
	}
	h := html(t, r)
	for _, want := range []string{
		"<h2>Budgets</h2>",
		`<tr><td>plan</td><td>$3.00/$10.00</td><td>$3.00</td><td>8</td><td>0</td><td>2</td><td>within</td></tr>`,
		`<td>step &#34;agent&#34;</td><td>$3.00/$2.50</td>`,
		`<span class="st-fail">spent: $3.00 of max_cost_usd 2.50</span>`,
		`<title>agent: attempt 2 exited 1 (budget), 500ms, spent $1.50 · 4 turns</title>`,
		` · spent $1.50 · 4 turns</div>`,
		"attempt 1 exited 1, spent $1.50 · 4 turns",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	// A plan without budgets: no section, no budgets key.
	r.Budgets = nil
	if h := html(t, r); strings.Contains(h, "<h2>Budgets</h2>") {
		t.Error("a report without budgets has their section")
	}
	if b, _ := json.Marshal(r); strings.Contains(string(b), `"budgets"`) {
		t.Error("a report without budgets has budgets in its JSON")
	}
}
