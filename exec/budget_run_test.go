package exec

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/faber-run/faber/spec"
)

func init() { allPayloads = append(allPayloads, &AgentSpent{}) }

// TestAgentSpentReplay: agent_spent events add up into the run's Spent,
// from the log (Replay) as from the owner's commits (Committed); a view
// handed out keeps what it had.
func TestAgentSpentReplay(t *testing.T) {
	run := &RunState{RunID: "r"}
	evs := []Event{
		{Type: EvRunStarted, Data: &RunStarted{Plan: "p", Steps: []StepInfo{{ID: "a", Name: "a", Phase: "main", Needs: []string{}}}}},
		SpendOnRun(run, Spent{CostUSD: 1.25, Turns: 3, Tokens: 100, Attempts: 9}),
		SpendOnRun(run, Spent{CostUSD: 0.5, Turns: 1}),
	}
	Stamp(evs, 0, "r", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	want := Spent{CostUSD: 1.75, Turns: 4, Tokens: 100}
	if run.Spent == nil || *run.Spent != want {
		t.Fatalf("run.Spent = %+v, want %+v", run.Spent, want)
	}
	var lines [][]byte
	for _, e := range evs {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	if got := string(lines[1]); got != `{"seq":2,"time":"2026-01-02T03:04:05Z","type":"agent_spent","run_id":"r","cost_usd":1.25,"tokens":100,"turns":3}` {
		t.Errorf("agent_spent JSON = %s", got)
	}
	v, err := Replay(lines)
	if err != nil {
		t.Fatal(err)
	}
	if v.Run.Spent == nil || *v.Run.Spent != want {
		t.Errorf("replayed Spent = %+v, want %+v", v.Run.Spent, want)
	}
	p := NewReplayer()
	p.Committed(evs[:2])
	first := p.View()
	p.Committed(evs[2:])
	if got := p.View(); !reflect.DeepEqual(got.Run, v.Run) {
		t.Errorf("committed run = %+v, replayed %+v", got.Run, v.Run)
	}
	if *first.Run.Spent != (Spent{CostUSD: 1.25, Turns: 3, Tokens: 100}) {
		t.Errorf("an earlier view changed: %+v", first.Run.Spent)
	}
}

// TestPlanBudgetReached: the plan's budget counts the run's agents with
// its steps; none set is never reached.
func TestPlanBudgetReached(t *testing.T) {
	p := &spec.Plan{Budget: &spec.Budget{MaxCostUSD: 2}, Steps: []*spec.Step{{ID: "a", StepBody: &spec.StepBody{}}}}
	steps := []*StepState{{ID: "a", Spent: &Spent{CostUSD: 0.5}}}
	if got := PlanBudgetReached(p, &RunState{Spent: &Spent{CostUSD: 1}}, steps); got != "" {
		t.Errorf("$1.50 of $2: reached %q", got)
	}
	if got := PlanBudgetReached(p, &RunState{Spent: &Spent{CostUSD: 1.5}}, steps); got != "$2.00 of max_cost_usd 2.00" {
		t.Errorf("$2 of $2: reached %q", got)
	}
	if got := PlanBudgetReached(&spec.Plan{Steps: p.Steps}, &RunState{Spent: &Spent{CostUSD: 9}}, steps); got != "" {
		t.Errorf("no budget: reached %q", got)
	}
}

// TestFailedOnBudget: only a last attempt with cause budget counts.
func TestFailedOnBudget(t *testing.T) {
	for _, c := range []struct {
		attempts []*AttemptEnd
		want     bool
	}{
		{nil, false},
		{[]*AttemptEnd{{Attempt: 1, Cause: spec.CauseBudget}}, true},
		{[]*AttemptEnd{{Attempt: 1, Cause: spec.CauseBudget}, {Attempt: 2, ExitCode: new(1)}}, false},
		{[]*AttemptEnd{{Attempt: 1, Cause: "timeout"}}, false},
	} {
		if got := FailedOnBudget(&StepState{Attempts: c.attempts}); got != c.want {
			t.Errorf("%+v: %v, want %v", c.attempts, got, c.want)
		}
	}
}

// TestReadSpent: a result file's usage, as a step's; none, or bad fields
// named.
func TestReadSpent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if sp, bad := ReadSpent(path); !sp.IsZero() || bad != "" {
		t.Errorf("no file: %+v %q", sp, bad)
	}
	os.WriteFile(path, []byte(`{"cost_usd": 0.42, "turns": 7, "tokens": "many"}`), 0o600)
	sp, bad := ReadSpent(path)
	if sp != (Spent{CostUSD: 0.42, Turns: 7}) || bad != `tokens "many" is not a whole number ≥ 0` {
		t.Errorf("got %+v %q", sp, bad)
	}
}
