package importer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// pb wraps workflow steps (YAML lines at column 1) into a playbook.
func pb(workload, steps string) string {
	s := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\n"
	if workload != "" {
		s += "workload:\n" + indent(workload, "  ")
	}
	return s + "workflow:\n" + indent(steps, "  ")
}

func indent(s, by string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(by + l + "\n")
	}
	return b.String()
}

type noetlOut struct {
	Name    string
	Shell   string
	Context map[string]string
	Steps   []struct {
		ID, Name, Description, When, Run, Plan string
		Needs                                  []string
		Context                                map[string]string
	}
}

func convertNoetl(t *testing.T, in string) (noetlOut, []string) {
	t.Helper()
	out, warns, err := Convert(FormatNoetl, "w.yaml", []byte(in), Options{})
	if err != nil {
		t.Fatalf("Convert: %v\n%s", err, in)
	}
	var p noetlOut
	if err := yaml.Unmarshal(out, &p); err != nil {
		t.Fatalf("the plan is not YAML: %v\n%s", err, out)
	}
	return p, warns
}

func TestDetectNoetl(t *testing.T) {
	tests := []struct {
		name, in string
		want     Format
	}{
		{"playbook", pb("", "- step: start\n  tool: {kind: shell, cmds: echo}\n"), FormatNoetl},
		{"apiVersion only", "apiVersion: noetl.io/v2\nworkflow:\n  - step: a\n", FormatNoetl},
		{"kind only", "kind: Playbook\nworkflow:\n  - step: a\n", FormatNoetl},
		{"json", `{"kind": "Playbook", "metadata": {"name": "x"}, "workflow": [{"step": "start"}]}`, FormatNoetl},
		{"no kind, no apiVersion", "metadata: {name: x}\nworkflow:\n  - step: a\n", FormatNone},
		{"another apiVersion", "apiVersion: argoproj.io/v1\nworkflow:\n  - step: a\n", FormatNone},
		{"a step without step:", "kind: Playbook\nworkflow:\n  - step: a\n  - name: b\n", FormatNone},
		{"empty workflow", "kind: Playbook\nworkflow: []\n", FormatNone},
		{"faber plan.json shape", `{"kind": "Playbook", "workflow": {"phases": {}}}`, FormatFaber},
		{"a faber plan", "kind: Playbook\nname: x\nsteps: []\nworkflow:\n  - step: a\n", FormatNone},
		{"torc and noetl", "kind: Playbook\nworkflow:\n  - step: a\njobs:\n  - {name: a, command: x}\n", FormatNone},
	}
	for _, tt := range tests {
		if got := Detect([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: Detect = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// step is what a converted step must be (fields not named: empty).
type step struct {
	id, when, run string
	needs         []string
}

func TestNoetlMapping(t *testing.T) {
	tests := []struct {
		name      string
		workload  string
		steps     string
		want      []step
		wantCtx   map[string]string
		wantWarns []string
	}{
		{
			name: "a chain: plain needs, no conditions; start without tool does nothing; end is left out",
			steps: `- step: start
  next: [{step: a}]
- step: a
  tool: {kind: shell, cmds: "echo a"}
  next: [{step: b}]
- step: b
  tool: {kind: shell, cmds: ["echo b"]}
  next: [{step: end}]
- step: end`,
			want: []step{
				{id: "start", run: "true", needs: []string{}},
				{id: "a", run: "echo a", needs: []string{"start"}},
				{id: "b", run: "echo b", needs: []string{"a"}},
			},
		},
		{
			name:      "workload: strings, as noetl run renders them",
			workload:  "env: prod\nn: 30\nflag: true\nempty:\nnested: {a: 1}\n",
			steps:     "- step: start\n  tool: {kind: shell, cmds: 'echo {{ workload.env }} {{ n }}'}",
			want:      []step{{id: "start", run: "echo {env} {n}", needs: []string{}}},
			wantCtx:   map[string]string{"env": "prod", "n": "30", "flag": "true", "empty": ""},
			wantWarns: []string{"w.yaml:10:3: workload: nested: left out"},
		},
		{
			name: "cmds: a list and the lines of a string each run in a subshell and stop at the first failure; other braces doubled",
			steps: `- step: start
  tool:
    kind: shell
    cmds:
      - cd /tmp
      - "echo ${HOME} {x} # note"
- step: two
  tool:
    kind: shell
    cmds: |
      echo one

      echo two
  next: []`,
			want: []step{
				{id: "start", run: "( cd /tmp ) || exit\n(\necho ${{HOME}} {{x}} # note\n) || exit", needs: []string{}},
			},
			wantWarns: []string{`step "two": left out`},
		},
		{
			name: "case: first then wins (its steps in the order listed), else after the whens before it; next only if no then fired",
			steps: `- step: start
  case:
    - when: "{{ workload.env }} == prod"
      then: [{step: p}]
    - when: "{{ workload.env }} != 'staging'"
      then: [{step: q}, {step: r}]
      else: [{step: s}]
  next: [{step: n}]
- {step: p, tool: {kind: shell, cmds: p}}
- {step: q, tool: {kind: shell, cmds: q}}
- {step: r, tool: {kind: shell, cmds: r}}
- {step: s, tool: {kind: shell, cmds: s}}
- {step: n, tool: {kind: shell, cmds: n}}`,
			workload: "env: prod",
			want: []step{
				{id: "start", run: "true", needs: []string{}},
				{id: "p", run: "p", needs: []string{"start"}, when: `context.env == "prod"`},
				{id: "q", run: "q", needs: []string{"start"}, when: `context.env != "prod" && context.env != "staging"`},
				{id: "r", run: "r", needs: []string{"start", "q"}, when: `context.env != "prod" && context.env != "staging"`},
				{id: "s", run: "s", needs: []string{"start"}, when: `context.env != "prod" && context.env == "staging"`},
				{id: "n", run: "n", needs: []string{"start"}, when: `context.env != "prod" && context.env == "staging"`},
			},
		},
		{
			name:     "router arcs, exclusive (the default): an arc fires only if no earlier one did; after one without when, none",
			workload: "a: x\nb: y",
			steps: `- step: start
  tool: {kind: shell, cmds: go}
  next:
    arcs:
      - {step: one, when: "{{ workload.a }} == x"}
      - {step: two, when: "{{ workload.b }}"}
      - {step: three}
      - {step: four}
- {step: one, tool: {kind: shell, cmds: "1"}}
- {step: two, tool: {kind: shell, cmds: "2"}}
- {step: three, tool: {kind: shell, cmds: "3"}}
- {step: four, tool: {kind: shell, cmds: "4"}}`,
			want: []step{
				{id: "start", run: "go", needs: []string{}},
				{id: "one", run: "1", needs: []string{"start"}, when: `context.a == "x"`},
				{id: "two", run: "2", needs: []string{"start"}, when: `context.a != "x" && (context.b != "" && context.b != "false" && context.b != "0")`},
				{id: "three", run: "3", needs: []string{"start"}, when: `context.a != "x" && !(context.b != "" && context.b != "false" && context.b != "0")`},
			},
			wantWarns: []string{"w.yaml:16:11: step \"start\": next: arcs: arcs after an arc without when: dropped", `step "four": left out`},
		},
		{
			name:     "router arcs, inclusive (run in the order listed); a {{ expression }}; several arcs into one step: one when, any arc",
			workload: "a: x\nb: y",
			steps: `- step: start
  tool: {kind: shell, cmds: go}
  next:
    spec: {mode: inclusive}
    arcs:
      - {step: one, when: "{{ workload.a == 'x' }}"}
      - {step: two, when: "{{ workload.b }} == y"}
- step: one
  tool: {kind: shell, cmds: "1"}
  next: [{step: join}]
- step: two
  tool: {kind: shell, cmds: "2"}
  next: [{step: join, when: "{{ workload.a }} == z"}]
- {step: join, tool: {kind: shell, cmds: j}}`,
			want: []step{
				{id: "start", run: "go", needs: []string{}},
				{id: "one", run: "1", needs: []string{"start"}, when: `context.a == "x"`},
				{id: "two", run: "2", needs: []string{"start", "one"}, when: `context.b == "y"`},
				{id: "join", run: "j", needs: []string{"one", "two"}, when: `steps.one.status == "success" || (steps.two.status == "success" && context.a == "z")`},
			},
		},
		{
			name:     "an arc from a step that cannot be skipped needs no status test; a step-level when is and-ed; a next list runs in order",
			workload: "a: x",
			steps: `- step: start
  tool: {kind: shell, cmds: go}
  next: [{step: b}, {step: c, when: "{{ workload.a }} == x"}]
- step: b
  when: "{{ workload.a }} != y"
  tool: {kind: shell, cmds: b}
  next: [{step: d}]
- step: c
  tool: {kind: shell, cmds: c}
  next: [{step: d}]
- step: d
  tool: {kind: shell, cmds: d}
  next: [{step: e}]
- {step: e, tool: {kind: shell, cmds: e}}`,
			want: []step{
				{id: "start", run: "go", needs: []string{}},
				{id: "b", run: "b", needs: []string{"start"}, when: `context.a != "y"`},
				{id: "c", run: "c", needs: []string{"start", "b"}, when: `context.a == "x"`},
				{id: "d", run: "d", needs: []string{"b", "c"}, when: `steps.b.status == "success" || steps.c.status == "success"`},
				{id: "e", run: "e", needs: []string{"d"}, when: `steps.d.status == "success"`},
			},
		},
		{
			name: "list next with spec next_mode exclusive; then as {next: ...}; the entry is the step named start",
			steps: `- {step: other, tool: {kind: shell, cmds: o}}
- step: start
  spec: {next_mode: exclusive}
  tool: {kind: shell, cmds: f}
  case:
    - when: "{{ workload.a }}"
      then: {next: {step: other}}
  next:
    - {step: x, when: "{{ workload.a }} == 1"}
    - {step: y}
- {step: x, tool: {kind: shell, cmds: x}}
- {step: y, tool: {kind: shell, cmds: y}}
- {step: z, tool: {kind: shell, cmds: z}}`,
			workload: "a: '1'",
			want: []step{
				{id: "other", run: "o", needs: []string{"start"}, when: `(context.a != "" && context.a != "false" && context.a != "0")`},
				{id: "start", run: "f", needs: []string{}},
				{id: "x", run: "x", needs: []string{"start"}, when: `!(context.a != "" && context.a != "false" && context.a != "0") && context.a == "1"`},
				{id: "y", run: "y", needs: []string{"start"}, when: `!(context.a != "" && context.a != "false" && context.a != "0") && context.a != "1"`},
			},
			wantWarns: []string{`step "z": left out`},
		},
		{
			name: "names that are no ids; a step id with '-' in a condition",
			steps: `- step: Start Here
  tool: {kind: shell, cmds: s}
  next: [{step: "Load Data", when: "{{ workload.a }} == 1"}]
- step: Load Data
  tool: {kind: shell, cmds: l}
  next: [{step: fin}]
- {step: fin, tool: {kind: shell, cmds: f}}`,
			workload: "a: '1'",
			want: []step{
				{id: "start-here", run: "s", needs: []string{}},
				{id: "load-data", run: "l", needs: []string{"start-here"}, when: `context.a == "1"`},
				{id: "fin", run: "f", needs: []string{"load-data"}, when: `steps["load-data"].status == "success"`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := pb(tt.workload, tt.steps)
			p, warns := convertNoetl(t, in)
			if p.Name != "t" || p.Shell != "bash" {
				t.Errorf("name %q, shell %q", p.Name, p.Shell)
			}
			if tt.wantCtx != nil && !reflect.DeepEqual(p.Context, tt.wantCtx) {
				t.Errorf("context = %v, want %v", p.Context, tt.wantCtx)
			}
			var got []step
			for _, s := range p.Steps {
				got = append(got, step{id: s.ID, when: s.When, run: s.Run, needs: s.Needs})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("steps:\n got %+v\nwant %+v\n%s", got, tt.want, in)
			}
			if len(warns) != len(tt.wantWarns) {
				t.Errorf("warnings %q, want %q", warns, tt.wantWarns)
			}
			for i, w := range tt.wantWarns {
				if i < len(warns) && !strings.Contains(warns[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warns[i], w)
				}
			}
		})
	}
}

func TestNoetlSubPlaybook(t *testing.T) {
	p, _ := convertNoetl(t, pb("v: '1'", `- step: start
  desc: calls the child
  tool:
    kind: playbook
    path: ./child.yaml
    args: {tag: "v{{ workload.v }}", n: 3}`))
	s := p.Steps[0]
	if s.Plan != "./child.yaml" || s.Run != "" || s.Description != "calls the child" ||
		!reflect.DeepEqual(s.Context, map[string]string{"tag": "v{v}", "n": "3"}) {
		t.Errorf("sub-plan step = %+v", s)
	}
}

func TestNoetlErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"http tool", pb("", "- step: start\n  tool: {kind: http, url: x}"),
			`w.yaml:7:18: step "start": tool: kind "http": not supported by faber import noetl`},
		{"python tool", pb("", "- step: start\n  tool:\n    kind: python\n    code: x"),
			`w.yaml:8:13: step "start": tool: kind "python": not supported`},
		{"a filter", pb("", "- step: start\n  tool: {kind: shell, cmds: ['echo {{ workload.x | lower }}']}"),
			`w.yaml:7:38: step "start": tool: cmds: the Jinja template "{{ workload.x | lower }}" cannot be translated: a Jinja filter`},
		{"a step result", pb("", "- step: start\n  tool:\n    kind: shell\n    cmds:\n      - echo ok\n      - 'echo {{ fetch.result }}'"),
			`w.yaml:11:17: step "start": tool: cmds: the Jinja template "{{ fetch.result }}" cannot be translated: it reads a step result`},
		{"a loop block", pb("", "- step: start\n  tool: {kind: shell, cmds: '{% for x in y %}echo{% endfor %}'}"),
			`cannot be translated (faber substitutes {{ workload.NAME }} only)`},
		{"a condition with and", pb("", "- step: start\n  next:\n    - step: b\n      when: '{{ workload.a }} == 1 and {{ workload.b }} == 2'\n- {step: b, tool: {kind: shell, cmds: b}}"),
			`w.yaml:9:15: step "start": next: when: the condition "{{ workload.a }} == 1 and {{ workload.b }} == 2" cannot be translated`},
		{"a comparison >=", pb("", "- step: start\n  case:\n    - when: '{{ workload.t }} >= 25'\n      then: [{step: b}]\n- {step: b, tool: {kind: shell, cmds: b}}"),
			`w.yaml:8:15: step "start": case 1: when: the condition "{{ workload.t }} >= 25" cannot be translated`},
		{"rhai", pb("", "- step: start\n  case:\n    - rhai: 'x'\n      then: [{step: b}]\n- {step: b, tool: {kind: shell, cmds: b}}"),
			`w.yaml:8:9: step "start": case 1: rhai: a Rhai condition cannot be translated`},
		{"unknown step", pb("", "- step: start\n  next: [{step: biuld}]\n- {step: build, tool: {kind: shell, cmds: b}}"),
			`w.yaml:7:19: step "start": next step "biuld": no such step (did you mean "build"?)`},
		{"duplicate step", pb("", "- {step: start, next: [{step: a}]}\n- {step: a, tool: {kind: shell, cmds: a}}\n- {step: a, tool: {kind: shell, cmds: b}}"),
			`w.yaml:8:12: step "a": defined twice (first at line 7)`},
		{"unknown field", pb("", "- step: start\n  retries: 3"),
			`w.yaml:7:5: step "start": unknown NoETL step field "retries"`},
		{"vars", pb("", "- step: start\n  vars: {a: '{{ x.result }}'}"),
			`w.yaml:7:5: step "start": vars: not supported`},
		{"workbook", "kind: Playbook\nmetadata: {name: x}\nworkbook: []\nworkflow:\n  - step: start\n",
			`w.yaml:3:1: workbook: not supported`},
		{"no name", "kind: Playbook\nmetadata: {path: x}\nworkflow:\n  - step: start\n",
			`w.yaml:2:11: metadata: missing required field "name"`},
		{"a pipeline", pb("", "- step: start\n  tool:\n    - {kind: shell, cmds: a}"),
			`w.yaml:8:7: step "start": tool: a list of tools (a pipeline) is not supported`},
		{"a template in path", pb("", "- step: start\n  tool: {kind: playbook, path: '{{ workload.p }}.yaml'}"),
			`step "start": tool: path: a template cannot be translated`},
		{"bad workload key", pb("apiBase: x", "- step: start"),
			`w.yaml:6:3: workload: key "apiBase": a faber context key is [a-z_][a-z0-9_]*`},
		{"arc args", pb("", "- step: start\n  next: [{step: b, args: {x: 1}}]\n- {step: b, tool: {kind: shell, cmds: b}}"),
			`w.yaml:7:22: step "start": next: args: not supported`},
		{"distributed", "kind: Playbook\nmetadata: {name: x}\nexecutor: {profile: distributed}\nworkflow:\n  - step: start\n",
			`w.yaml:3:21: executor: profile: distributed`},
		{"kind other", "apiVersion: noetl.io/v2\nkind: Credential\nmetadata: {name: x}\nworkflow:\n  - step: start\n",
			`w.yaml:2:7: kind "Credential": faber import noetl converts a Playbook`},
	}
	for _, tt := range tests {
		_, _, err := Convert(FormatNoetl, "w.yaml", []byte(tt.in), Options{})
		var e *Errors
		if !errors.As(err, &e) {
			t.Errorf("%s: err = %v, want an *Errors", tt.name, err)
			continue
		}
		found := false
		for _, d := range e.Diags {
			if strings.Contains(format("w.yaml", d), tt.want) {
				found = true
			}
		}
		if !found {
			var all []string
			for _, d := range e.Diags {
				all = append(all, format("w.yaml", d))
			}
			t.Errorf("%s: errors %q, want one containing %q", tt.name, all, tt.want)
		}
	}
}

func TestNoetlConditions(t *testing.T) {
	tests := []struct{ in, want string }{
		{"{{ workload.env }} == production", `context.env == "production"`},
		{"{{ env }} == 'production'", `context.env == "production"`},
		{`"{{ workload.env }}" == "a b"`, ``}, // a quoted template is text around it
		{"{{ workload.env == 'prod' }}", `context.env == "prod"`},
		{"{{ workload.env != \"prod\" }}", `context.env != "prod"`},
		{"{{ workload.a }} == {{ workload.b }}", `context.a == context.b`},
		{"{{ workload.on }}", `(context.on != "" && context.on != "false" && context.on != "0")`},
		{"{{ workload.on }} == true", `context.on == "true"`},
		{"prod == prod", `"prod" == "prod"`},
		{"yes", `true`},
		{"0", `false`},
		{`{{ workload.x }} == 'it"s'`, `context.x == "it\"s"`},
	}
	for _, tt := range tests {
		c := &conv{file: "w.yaml"}
		got := c.noetlCond(tt.in, &yaml.Node{Line: 1, Column: 1}, "when")
		if tt.want == "" {
			if len(c.errs) == 0 {
				t.Errorf("%q: %q, want an error", tt.in, got)
			}
			continue
		}
		if got != tt.want || len(c.errs) > 0 {
			t.Errorf("%q: %q (errors %v), want %q", tt.in, got, c.errs, tt.want)
		}
	}
}

// TestNoetlPositions: the converted nodes carry the source positions, so
// validation messages point into the playbook.
func TestNoetlPositions(t *testing.T) {
	in := pb("a: x", `- step: start
  next: [{step: b, when: "{{ workload.a }} == x"}]
- step: b
  tool:
    kind: shell
    cmds: "echo b"`)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(in), &doc); err != nil {
		t.Fatal(err)
	}
	plan, _, err := ConvertNode(FormatNoetl, "w.yaml", &doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, steps := get(plan, "steps")
	b := steps.Content[1]
	pos := func(key string) [2]int {
		k, v := get(b, key)
		if v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
			v = v.Content[0]
		}
		_ = k
		return [2]int{v.Line, v.Column}
	}
	for key, want := range map[string][2]int{
		"id":    {10, 11}, // the step: name
		"needs": {9, 19},  // the arc naming it
		"when":  {10, 11}, // the step: name
		"run":   {13, 13}, // cmds
	} {
		if got := pos(key); got != want {
			t.Errorf("%s at %v, want %v", key, got, want)
		}
	}
}

// TestNoetlEntryAndEnd: executor.spec.entry_step picks the entry step (it
// needs nothing; the steps before it that nothing reaches are left out);
// the end step is left out, its tool dropped with a warning.
func TestNoetlEntryAndEnd(t *testing.T) {
	p, warns := convertNoetl(t, `kind: Playbook
metadata: {name: t}
executor: {profile: local, spec: {entry_step: go}}
workflow:
  - {step: start, tool: {kind: shell, cmds: s}, next: [{step: go}]}
  - {step: go, tool: {kind: shell, cmds: g}, next: [{step: end}]}
  - step: end
    tool: {kind: shell, cmds: "echo bye"}
`)
	if len(p.Steps) != 1 || p.Steps[0].ID != "go" || p.Steps[0].Needs == nil || len(p.Steps[0].Needs) != 0 || p.Steps[0].When != "" {
		t.Errorf("steps = %+v", p.Steps)
	}
	want := []string{
		`w.yaml:5:12: step "start": left out: no next or case leads to it from the entry step "go"`,
		`w.yaml:8:5: step "end": tool: dropped (noetl run runs nothing at the end step)`,
	}
	if !reflect.DeepEqual(warns, want) {
		t.Errorf("warnings %q, want %q", warns, want)
	}
}

// TestNoetlAliasBomb: one list of exclusive arcs made every step's next by
// a YAML alias would write conditions with the square of the arcs for
// every step: the work is bounded, and the playbook is an error.
func TestNoetlAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: Playbook\nmetadata: {name: bomb}\nworkload: {a: x}\nworkflow:\n  - step: start\n    next: &R\n      arcs:\n")
	for j := 0; j < 1000; j++ {
		fmt.Fprintf(&b, "        - {step: s%d, when: \"{{ workload.a }} == v%d\"}\n", j%100, j)
	}
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "  - {step: s%d, tool: {kind: shell, cmds: x}, next: *R}\n", i)
	}
	_, _, err := Convert(FormatNoetl, "w.yaml", []byte(b.String()), Options{})
	if err == nil || !strings.Contains(err.Error(), "too many arcs, or conditions too long") {
		t.Fatalf("err = %v", err)
	}
}
