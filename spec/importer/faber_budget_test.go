package importer

import (
	"errors"
	"strings"
	"testing"
)

// faberBudgetIn is a FABER workflow with budgets at every level FABER
// has: the workflow's defaults, phase_defaults and the steps.
const faberBudgetIn = `{
  "id": "p",
  "workflow": {
    "defaults": {"max_budget_usd": 2, "max_turns": 30},
    "phase_defaults": {"build": {"max_turns": 50}, "release": {"max_budget_usd": 0}},
    "phases": {
      "frame": {"steps": [{"id": "fetch", "prompt": "f"}]},
      "build": {"steps": [{"id": "implement", "prompt": "i", "max_budget_usd": 1.5}]},
      "evaluate": {"steps": [{"id": "test", "prompt": "t", "max_turns": 7, "max_budget_usd": 1e1}]},
      "release": {"steps": [{"id": "ship", "prompt": "s"}]}
    }
  }
}`

// TestFaberBudgets: each step's max_budget_usd and max_turns become its
// budget:, field by field from the step, else its phase's phase_defaults,
// else the workflow's defaults, as FABER resolves them; a max_budget_usd
// of 0 is no cost ceiling (a warning at it) and ends the lookup there;
// the budget sits at the position of the FABER field it came from.
func TestFaberBudgets(t *testing.T) {
	out, warns, err := Convert(FormatFaber, "plan.json", []byte(faberBudgetIn), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"      - id: frame-fetch\n        run: /prompt f\n        budget:\n          max_cost_usd: 2\n          max_turns: 30\n",
		"      - id: build-implement\n        run: /prompt i\n        budget:\n          max_cost_usd: 1.5\n          max_turns: 50\n",
		"      - id: evaluate-test\n        run: /prompt t\n        budget:\n          max_cost_usd: 10\n          max_turns: 7\n",
		"      - id: release-ship\n        run: /prompt s\n        budget:\n          max_turns: 30\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	want := `plan.json:5:64: workflow: phase_defaults: release: max_budget_usd: 0 dropped (faber's max_cost_usd is more than 0): no cost ceiling`
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings:\n%s\nwant only:\n%s", strings.Join(warns, "\n"), want)
	}
	plan, _, err := ConvertNode(FormatFaber, "plan.json", mustYAML(t, faberBudgetIn), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, phases := get(plan, "phases")
	for _, c := range []struct {
		phase               int
		field               string
		line, col           int
		budgetLine, budgetC int
	}{
		{0, "max_cost_usd", 4, 36, 4, 36}, // defaults
		{0, "max_turns", 4, 52, 4, 36},
		{1, "max_cost_usd", 8, 80, 8, 80}, // the step's own
		{1, "max_turns", 5, 47, 8, 80},    // phase_defaults
		{3, "max_turns", 4, 52, 4, 52},
	} {
		_, steps := get(phases.Content[c.phase], "steps")
		k, b := get(steps.Content[0], "budget")
		if b == nil {
			t.Fatalf("phase %d: no budget", c.phase)
		}
		if k.Line != c.budgetLine || k.Column != c.budgetC {
			t.Errorf("phase %d: budget at %d:%d, want %d:%d", c.phase, k.Line, k.Column, c.budgetLine, c.budgetC)
		}
		_, v := get(b, c.field)
		if v == nil || v.Line != c.line || v.Column != c.col {
			t.Errorf("phase %d: %s at %v, want %d:%d", c.phase, c.field, v, c.line, c.col)
		}
	}
}

// TestFaberBudgetNone: a workflow without budgets converts steps without
// budget:.
func TestFaberBudgetNone(t *testing.T) {
	in := `{"id": "p", "workflow": {"phases": {"build": {"steps": [{"id": "b", "prompt": "b"}]}}}}`
	out, _, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "budget") {
		t.Errorf("a budget from nowhere:\n%s", out)
	}
}

// TestFaberBudgetErrors: a budget value faber cannot take, and a field of
// defaults or phase_defaults with no faber equivalent, is an error at its
// position that says what is accepted.
func TestFaberBudgetErrors(t *testing.T) {
	for _, c := range []struct{ defaults, step, want string }{
		{`"max_budget_usd": "2"`, ``, `plan.json:4:36: workflow: defaults: max_budget_usd: must be a number from 0 to 1e12 (US dollars), not the string "2"`},
		{`"max_budget_usd": -1`, ``, `plan.json:4:36: workflow: defaults: max_budget_usd: must be a number from 0 to 1e12 (US dollars), not -1`},
		{`"max_budget_usd": 2e12`, ``, `plan.json:4:36: workflow: defaults: max_budget_usd: must be a number from 0 to 1e12 (US dollars), not 2e12`},
		{`"max_turns": 0`, ``, `plan.json:4:31: workflow: defaults: max_turns: must be a whole number of at least 1, not 0`},
		{`"model": "claude-sonnet-5"`, ``, `plan.json:4:18: workflow: defaults: model: no faber equivalent (faber converts max_budget_usd and max_turns here, to each step's budget:)`},
		{``, `, "max_turns": 2.5`, `plan.json:6:67: phase build: step "b": max_turns: must be a whole number of at least 1, not 2.5`},
		{``, `, "max_budget_usd": [1]`, `plan.json:6:72: phase build: step "b": max_budget_usd: must be a number from 0 to 1e12 (US dollars), not a list`},
	} {
		in := `{
  "id": "p",
  "workflow": {
    "defaults": {` + c.defaults + `},
    "phases": {
      "build": {"steps": [{"id": "b", "prompt": "b"` + c.step + `}]}
    }
  }
}`
		_, _, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
		var e *Errors
		if !errors.As(err, &e) {
			t.Fatalf("%s%s: err %v", c.defaults, c.step, err)
		}
		if got := err.Error(); got != c.want {
			t.Errorf("%s%s:\n got %s\nwant %s", c.defaults, c.step, got, c.want)
		}
	}
	in := `{"id": "p", "workflow": {"phase_defaults": {"deploy": {"max_turns": 5}}, "phases": {"build": {"steps": [{"id": "b", "prompt": "b"}]}}}}`
	_, _, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), `plan.json:1:45: workflow: phase_defaults: unknown phase "deploy" (FABER's phases are frame, architect, build, evaluate, release)`) {
		t.Errorf("phase_defaults of an unknown phase: %v", err)
	}
}
