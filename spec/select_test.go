package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// partText is a selected plan as text: each step with its deps, then its
// phases and levels.
func partText(p *Plan) string {
	var b strings.Builder
	for i, s := range p.Steps {
		if s.Index != i {
			fmt.Fprintf(&b, "BAD INDEX %s %d; ", s.ID, s.Index)
		}
		if p.Step(s.ID) != s {
			fmt.Fprintf(&b, "BAD BYID %s; ", s.ID)
		}
		fmt.Fprintf(&b, "%s<%s> ", s.ID, strings.Join(s.Deps, ","))
	}
	b.WriteString("|")
	for _, ph := range p.Phases {
		fmt.Fprintf(&b, " %s:", ph.Name)
		for _, s := range ph.Steps {
			if p.Step(s.ID) != s {
				fmt.Fprintf(&b, "BAD PHASE STEP %s; ", s.ID)
			}
			b.WriteString(" " + s.ID)
		}
	}
	b.WriteString(" |")
	for _, l := range p.Levels() {
		b.WriteString(" " + strings.Join(stepIDs(l), ","))
	}
	return b.String()
}

func TestSelect(t *testing.T) {
	const phased = `phases:
  - {name: one, steps: [{id: a, run: x}, {id: b, run: x}]}
  - {name: two, parallel: true, steps: [{id: c, run: x}, {id: d, run: x}]}
  - {name: three, steps: [{id: e, run: x}]}
end: {run: x}`
	const fan = `steps:
  - {id: a, run: x}
  - {id: b, run: x, needs: []}
  - {id: f, run: "x {item}", foreach: [1, 2], needs: [a]}
  - {id: g, run: "x {item}", foreach: [1, 2], needs: ["f[{item}]", b]}
  - {id: h, run: x, needs: [g]}
  - {id: z, run: x, needs: []}`
	tests := []struct {
		name          string
		src           string
		targets, from []string
		want          string
	}{
		{"a target and what it needs, by phase", phased, []string{"c"}, nil,
			"a<> b<a> c<a,b> | one: a b two: c | a b c"},
		{"two targets: the union", phased, []string{"c", "d"}, nil,
			"a<> b<a> c<a,b> d<a,b> | one: a b two: c d | a b c,d"},
		{"--from: it and what is downstream, deps on steps left out dropped", phased, nil, []string{"c"},
			"c<> e<c> | two: c three: e | c e"},
		{"--from d drops c", phased, nil, []string{"d"},
			"d<> e<d> | two: d three: e | d e"},
		{"a target and --from: the union", phased, []string{"a"}, []string{"d"},
			"a<> d<a> e<d> | one: a two: d three: e | a d e"},
		{"a fan-out is whole, with what its items need", fan, []string{"g"}, nil,
			"a<> b<> f[1]<a> f[2]<a> f<a,f[1],f[2]> g[1]<b,f[1]> g[2]<b,f[2]> g<b,g[1],g[2]> | main: a b f[1] f[2] f g[1] g[2] g | a,b f[1],f[2] f,g[1],g[2] g"},
		{"--from a fan-out: its items, and what follows", fan, nil, []string{"g"},
			"g[1]<> g[2]<> g<g[1],g[2]> h<g> | main: g[1] g[2] g h | g[1],g[2] g h"},
		{"--from upstream of a fan-out's items takes the whole fan-out", fan, nil, []string{"a"},
			"a<> f[1]<a> f[2]<a> f<a,f[1],f[2]> g[1]<f[1]> g[2]<f[2]> g<g[1],g[2]> h<g> | main: a f[1] f[2] f g[1] g[2] g h | a f[1],f[2] f,g[1],g[2] g h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "name: t\n"+tt.src, Options{})
			before := partText(p)
			q, err := p.Select(tt.targets, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			if got := partText(q); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if partText(p) != before {
				t.Errorf("Select changed the plan: %s", partText(p))
			}
			if (p.End == nil) != (q.End == nil) {
				t.Errorf("end step lost")
			}
		})
	}
}

func TestSelectDynamicFanOut(t *testing.T) {
	p := mustParse(t, `name: t
steps:
  - {id: a, run: x}
  - {id: mk, run: x, needs: []}
  - {id: g, run: "x {item}", foreach: {glob: "*.txt"}, needs: [a, mk]}
  - {id: h, run: x, needs: [g]}`, Options{})
	q, err := p.Select(nil, []string{"mk"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := partText(q), "mk<> g<mk> h<g> | main: mk g h | mk g h"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	g := q.Step("g")
	if strings.Join(g.FanOut.Needs, ",") != "mk" || strings.Join(p.Step("g").FanOut.Needs, ",") != "a,mk" {
		t.Fatalf("needs: %v (the plan's %v)", g.FanOut.Needs, p.Step("g").FanOut.Needs)
	}
	// Its items, read when it runs, need what it needs in the part.
	q.SetItems(g, []string{"x.txt", "y.txt"})
	if got, want := partText(q), "mk<> g[x.txt]<mk> g[y.txt]<mk> g<mk,g[x.txt],g[y.txt]> h<g> | main: mk g[x.txt] g[y.txt] g h | mk g[x.txt],g[y.txt] g h"; got != want {
		t.Fatalf("after SetItems:\ngot  %s\nwant %s", got, want)
	}
	if len(p.Steps) != 4 {
		t.Fatalf("SetItems of the part changed the plan: %d steps", len(p.Steps))
	}
}

func TestSelectErrors(t *testing.T) {
	const src = `name: t
commands: {/fix: echo}
steps:
  - {id: build, run: "echo v=1 >> $FABER_OUTPUTS"}
  - {id: lint, run: x, needs: []}
  - {id: test, run: "x {steps.build.outputs.v}", needs: [build]}
  - {id: check, run: x, needs: [lint], when: 'steps.lint.status == "success"'}
  - {id: fix, run: x, needs: [build, lint], result_handling: {on_failure: "/fix {steps.build.outputs.v}"}}
  - {id: fan, run: "x {item}", foreach: [1, 2], needs: []}
end: {run: "x {steps.lint.outputs.w}"}`
	tests := []struct {
		targets, from []string
		want          string
	}{
		{[]string{"buidl"}, nil, `the plan has no step "buidl" (did you mean "build"?)`},
		{nil, []string{"nope"}, `the plan has no step "nope"`},
		{[]string{"fan[1]"}, nil, `step "fan[1]" is an item of fan-out "fan"; a part holds whole fan-outs: name "fan"`},
		{[]string{"end"}, nil, `the end step runs in every run`},
		{nil, []string{"test"}, `step "test" uses {steps.build.outputs.v}, but step "build" is left out of the part to run; add build to the steps named (or start --from it)`},
		{nil, []string{"check"}, `step "check" uses steps.lint in its when:, but step "lint" is left out`},
		{[]string{"lint"}, []string{"fix"}, `step "fix" uses {steps.build.outputs.v} in its handling of failures, but step "build" is left out`},
		{[]string{"build"}, nil, `the end step uses {steps.lint.outputs.w}, but step "lint" is left out`},
	}
	p := mustParse(t, src, Options{})
	for _, tt := range tests {
		_, err := p.Select(tt.targets, tt.from)
		var pe *PartError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Select(%v, %v): %v, want %q", tt.targets, tt.from, err, tt.want)
		}
	}
	if _, err := p.Select([]string{"test", "lint"}, nil); err != nil {
		t.Errorf("a part with what the steps use: %v", err)
	}
	if q, _ := p.Select(nil, nil); q != p {
		t.Errorf("no part: not the plan itself")
	}
}

// TestSelectUnionKeepsUses: a part of both STEPs and --from in which a step
// of one uses a step of the other that it no longer depends on (the steps
// between are left out) is refused: it could run first.
func TestSelectUnionKeepsUses(t *testing.T) {
	p := mustParse(t, `name: t
steps:
  - {id: u, run: "echo v=1 >> $FABER_OUTPUTS"}
  - {id: x, run: x, needs: [u]}
  - {id: f, run: x, needs: []}
  - {id: s, run: "x {steps.u.outputs.v}", needs: [x, f]}`, Options{})
	_, err := p.Select([]string{"u"}, []string{"f"})
	if err == nil || !strings.Contains(err.Error(), `step "s" uses {steps.u.outputs.v}, but in this part step "u" is no longer upstream of it (steps between them are left out); add s to the steps named`) {
		t.Fatalf("got %v", err)
	}
	if _, err := p.Select([]string{"u", "s"}, []string{"f"}); err != nil {
		t.Fatalf("with s named: %v", err)
	}
}
