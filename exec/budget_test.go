package exec

import (
	"testing"

	"github.com/faber-run/faber/spec"
)

func TestParseSpent(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Spent
		bad  string
	}{
		{`{"status":"failure","cost_usd":0.25,"turns":3,"tokens":1200}`, Spent{CostUSD: 0.25, Turns: 3, Tokens: 1200}, ""},
		{`{"turns":2}`, Spent{Turns: 2}, ""},
		{`{"cost_usd":null}`, Spent{}, ""},
		{`{"status":"success"}`, Spent{}, ""},
		{`{"cost_usd":"1.00","turns":2}`, Spent{Turns: 2}, `cost_usd "1.00" is not a number from 0 to 1e12`},
		{`{"cost_usd":-1}`, Spent{}, `cost_usd -1 is not a number from 0 to 1e12`},
		{`{"turns":1.5,"tokens":-3}`, Spent{}, `turns 1.5 is not a whole number ≥ 0; tokens -3 is not a whole number ≥ 0`},
		{`not json`, Spent{}, ""},
	} {
		got, bad := parseSpent([]byte(c.in))
		if got != c.want || bad != c.bad {
			t.Errorf("parseSpent(%s) = %+v, %q; want %+v, %q", c.in, got, bad, c.want, c.bad)
		}
	}
}

func TestAgentSpent(t *testing.T) {
	claude := `{"type":"result","subtype":"success","is_error":false,"num_turns":6,"result":"done","total_cost_usd":0.0327,` +
		`"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":40}}`
	for _, c := range []struct {
		in   string
		want Spent
		ok   bool
	}{
		{claude + "\n", Spent{CostUSD: 0.0327, Turns: 6, Tokens: 100}, true},
		// stream-json: the result object is the last line
		{`{"type":"system","subtype":"init"}` + "\n" + `{"type":"assistant"}` + "\n" + claude + "\n\n", Spent{CostUSD: 0.0327, Turns: 6, Tokens: 100}, true},
		{claude + "\nsome text after\n", Spent{}, false},
		{`{"type":"assistant","total_cost_usd":1}`, Spent{}, false},
		{`{"type":"result"}`, Spent{}, false},
		{"plain output\n", Spent{}, false},
		{"", Spent{}, false},
	} {
		got, ok := agentSpent([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("agentSpent(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestReached(t *testing.T) {
	b := &spec.Budget{MaxCostUSD: 0.75, MaxTurns: 10, MaxAttempts: 3}
	for _, c := range []struct {
		s    Spent
		want string
	}{
		{Spent{}, ""},
		{Spent{CostUSD: 0.25 + 0.25 + 0.25}, "$0.75 of max_cost_usd 0.75"},
		{Spent{CostUSD: 0.1 + 0.2 + 0.45}, "$0.75 of max_cost_usd 0.75"}, // float sums reach the limit
		{Spent{CostUSD: 0.74, Turns: 9, Attempts: 2}, ""},
		{Spent{Turns: 10}, "10 of max_turns 10"},
		{Spent{Attempts: 3, Tokens: 1 << 40}, "3 of max_attempts 3"},
	} {
		if got := reached(b, c.s); got != c.want {
			t.Errorf("reached(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// TestBudgets: the plan's line sums every step but the end step, a
// phase's its steps, and a step's budget gives a line per item that spent.
func TestBudgets(t *testing.T) {
	p := &spec.Plan{
		Budget: &spec.Budget{MaxTurns: 10},
		Phases: []*spec.Phase{{Name: "a", Budget: &spec.Budget{MaxAttempts: 2}}, {Name: "b"}},
		Steps:  []*spec.Step{{ID: "x", StepBody: &spec.StepBody{Phase: "a", Budget: &spec.Budget{MaxCostUSD: 1}}}, {ID: "y", StepBody: &spec.StepBody{Phase: "b"}}},
		End:    &spec.Step{ID: "end", Index: -1, StepBody: &spec.StepBody{}},
	}
	steps := []*StepState{
		{ID: "x[1]", Phase: "a", FanOut: "x", Spent: &Spent{CostUSD: 1, Turns: 4, Attempts: 2}},
		{ID: "x[2]", Phase: "a", FanOut: "x"},
		{ID: "x", Phase: "a"},
		{ID: "y", Phase: "b", Spent: &Spent{Turns: 3, Attempts: 1}},
		{ID: "end", Spent: &Spent{Turns: 50, Attempts: 1}},
	}
	got := Budgets(p, &RunState{Spent: &Spent{Turns: 3}}, steps)
	want := []string{
		"plan: 10/10 turns: 10 of max_turns 10",
		`phase "a": 2/2 attempts: 2 of max_attempts 2`,
		`step "x[1]": $1.00/$1.00: $1.00 of max_cost_usd 1.00`,
	}
	if len(got) != len(want) {
		t.Fatalf("Budgets = %+v", got)
	}
	for i, l := range got {
		if s := l.Label() + ": " + l.Text() + ": " + l.Reached; s != want[i] {
			t.Errorf("line %d = %q, want %q", i, s, want[i])
		}
	}
	if Budgets(&spec.Plan{Steps: p.Steps[1:]}, nil, steps) != nil {
		t.Error("a plan with no budget has budget lines")
	}
}
