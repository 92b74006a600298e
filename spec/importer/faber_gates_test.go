package importer

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// faberGatesIn is a FABER plan whose workflow asks for approval in every
// way it can; %s is the plan-level autonomy (or nothing).
const faberGatesIn = `{
  "id": "p",%s
  "workflow": {
    "autonomy": {"level": "autonomous", "description": "d", "pause_before_release": true,
                 "require_approval_for": ["evaluate", "implement", "release:ship"]},
    "phases": {
      "build": {"require_approval": true, "steps": [{"id": "implement", "prompt": "i", "max_turns": 9}]},
      "evaluate": {"steps": [{"id": "test", "prompt": "t"}]},
      "release": {"steps": [{"id": "ship", "prompt": "s", "max_budget_usd": 1.5}]}
    }
  }
}`

// TestFaberGates: each FABER setting becomes a gate where FABER asks, with
// a prompt that names the phase or step and the settings, and the gate
// sits at the first setting's position; the steps' budgets convert
// without a warning (TestFaberBudgets).
func TestFaberGates(t *testing.T) {
	in := strings.Replace(faberGatesIn, "%s", "", 1)
	out, warns, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  - name: build\n    approval: FABER phase build needs approval (require_approval). Start it?\n",
		"      - id: build-implement\n        run: /prompt i\n        approval: FABER step build:implement needs approval (require_approval_for). Run it?\n",
		"  - name: evaluate\n    approval: FABER phase evaluate needs approval (require_approval_for). Start it?\n",
		"  - name: release\n    approval: FABER phase release needs approval (pause_before_release). Start it?\n",
		"      - id: release-ship\n        run: /prompt s\n        approval: FABER step release:ship needs approval (require_approval_for). Run it?\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "evaluate-test\n        run: /prompt t\n        approval") {
		t.Errorf("a step nobody named got a gate:\n%s", out)
	}
	if len(warns) != 0 {
		t.Errorf("want no warnings, got:\n%s", strings.Join(warns, "\n"))
	}
	// The gates sit where FABER asks for them (the positions validation
	// reports): the phase's require_approval, the first reason of a gate.
	plan, _, err := ConvertNode(FormatFaber, "plan.json", mustYAML(t, in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		phase     int
		step      int // -1: the phase's gate
		line, col int
	}{
		{0, -1, 7, 17}, // build: require_approval
		{0, 0, 5, 55},  // build-implement: require_approval_for "implement"
		{1, -1, 5, 43}, // evaluate: require_approval_for "evaluate"
		{2, -1, 4, 61}, // release: pause_before_release
		{2, 0, 5, 68},  // release-ship: "release:ship"
	} {
		_, phases := get(plan, "phases")
		m := phases.Content[c.phase]
		if c.step >= 0 {
			_, steps := get(m, "steps")
			m = steps.Content[c.step]
		}
		_, a := get(m, "approval")
		if a == nil || a.Line != c.line || a.Column != c.col {
			t.Errorf("phase %d step %d: approval at %v, want %d:%d", c.phase, c.step, a, c.line, c.col)
		}
	}
}

// TestFaberAutonomyLevels: the plan's level wins over the workflow's;
// guarded and assist gate the release phase (assist with a warning),
// autonomous gates nothing.
func TestFaberAutonomyLevels(t *testing.T) {
	const wf = `{
  "id": "p",%s
  "workflow": {
    "autonomy": {"level": "%s"},
    "phases": {"build": {"steps": [{"id": "b", "prompt": "b"}]}, "release": {"steps": [{"id": "r", "prompt": "r"}]}}
  }
}`
	for _, c := range []struct {
		plan, wf string
		gate     string // "" for none
		warn     string
	}{
		{"", "guarded", "(autonomy level guarded)", ""},
		{"", "autonomous", "", ""},
		{"", "assist", "(autonomy level assist)", "plan.json:4:27: autonomy: level assist: FABER stops before the release phase"},
		{`"autonomy": "autonomous",`, "guarded", "", ""},
		{`"autonomy": {"level": "guarded"},`, "autonomous", "(autonomy level guarded)", ""},
	} {
		in := strings.Replace(strings.Replace(wf, "%s", c.plan, 1), "%s", c.wf, 1)
		out, warns, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
		if err != nil {
			t.Fatalf("%s/%s: %v", c.plan, c.wf, err)
		}
		gated := strings.Contains(string(out), "  - name: release\n    approval: FABER phase release needs approval "+c.gate)
		if c.gate == "" {
			gated = strings.Contains(string(out), "approval:")
		}
		if gated != (c.gate != "") {
			t.Errorf("%s/%s: want gate %q:\n%s", c.plan, c.wf, c.gate, out)
		}
		if got := strings.Join(warns, "\n"); (c.warn == "" && got != "") || !strings.Contains(got, c.warn) {
			t.Errorf("%s/%s: warnings %q, want %q", c.plan, c.wf, got, c.warn)
		}
	}
}

// TestFaberGateErrors: what cannot become a gate is an error at its
// position that says what is accepted.
func TestFaberGateErrors(t *testing.T) {
	for _, c := range []struct{ autonomy, phase, want string }{
		{`{"level": "careful"}`, ``, `plan.json:4:27: workflow: autonomy: level: unknown autonomy level "careful" (FABER's levels are dry-run, assist, guarded, autonomous)`},
		{`"dry-run"`, ``, `plan.json:4:17: autonomy: level dry-run: not supported`},
		{`{"require_approval_for": ["deploy"]}`, ``, `plan.json:4:43: autonomy: require_approval_for: "deploy" names no phase or step of this workflow (it takes a phase: frame, architect, build, evaluate, release; a step id, or phase:step-id; its steps are b)`},
		{`{"require_approval_for": ["release:b"]}`, ``, `plan.json:4:43: autonomy: require_approval_for: "release:b" names no phase or step`},
		{`{"pause_before_release": "yes"}`, ``, `plan.json:4:42: workflow: autonomy: pause_before_release: must be true or false, not "yes"`},
		{`{"checkin": 1}`, ``, `plan.json:4:18: workflow: autonomy: unknown FABER field "checkin"`},
		{`{}`, `"require_approval": "yes", `, `plan.json:5:46: phase build: require_approval: must be true or false, not "yes"`},
	} {
		in := `{
  "id": "p",
  "workflow": {
    "autonomy": ` + c.autonomy + `,
    "phases": {"build": {` + c.phase + `"steps": [{"id": "b", "prompt": "b"}]}}
  }
}`
		_, _, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
		var e *Errors
		if !errors.As(err, &e) {
			t.Fatalf("%s: err %v", c.autonomy, err)
		}
		if got := err.Error(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s%s:\n got %s\nwant %s", c.autonomy, c.phase, got, c.want)
		}
	}
}

func mustYAML(t *testing.T, s string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}
