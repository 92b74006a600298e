package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestDeps(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want map[string][]string // id -> Deps (nil = none)
	}{
		{
			name: "sequential steps",
			src:  "steps: [{id: a, run: x}, {id: b, run: x}, {id: c, run: x}]",
			want: map[string][]string{"a": nil, "b": {"a"}, "c": {"b"}},
		},
		{
			name: "phases",
			src: `phases:
  - {name: one, steps: [{id: a, run: x}, {id: b, run: x}]}
  - {name: two, parallel: true, steps: [{id: c, run: x}, {id: d, run: x}]}
  - {name: three, steps: [{id: e, run: x}, {id: f, run: x}]}`,
			want: map[string][]string{"a": nil, "b": {"a"}, "c": {"a", "b"}, "d": {"a", "b"}, "e": {"c", "d"}, "f": {"e"}},
		},
		{
			name: "parallel first phase",
			src:  "phases: [{name: p, parallel: true, steps: [{id: a, run: x}, {id: b, run: x}]}]",
			want: map[string][]string{"a": nil, "b": nil},
		},
		{
			name: "explicit needs replace implicit, in plan order",
			src: `phases:
  - {name: one, steps: [{id: a, run: x}, {id: b, run: x}, {id: c, run: x, needs: [b, a, b]}]}
  - {name: two, steps: [{id: d, run: x, needs: [a]}, {id: e, run: x}]}`,
			want: map[string][]string{"a": nil, "b": {"a"}, "c": {"a", "b"}, "d": {"a"}, "e": {"d"}},
		},
		{
			name: "needs empty means none",
			src:  "steps: [{id: a, run: x}, {id: b, run: x, needs: []}, {id: c, run: x}]",
			want: map[string][]string{"a": nil, "b": nil, "c": {"b"}},
		},
		{
			name: "needs a later phase",
			src: `phases:
  - {name: one, steps: [{id: a, run: x, needs: [c]}, {id: b, run: x}]}
  - {name: two, steps: [{id: c, run: x, needs: []}]}`,
			want: map[string][]string{"a": {"c"}, "b": {"a"}, "c": nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "name: x\n"+tt.src+"\n", Options{})
			got := map[string][]string{}
			for i, s := range p.Steps {
				if s.Index != i {
					t.Errorf("%s: Index %d, want %d", s.ID, s.Index, i)
				}
				if len(s.Deps) > 0 {
					got[s.ID] = s.Deps
				} else {
					got[s.ID] = nil
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("deps = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNeedsSetEmpty(t *testing.T) {
	p := mustParse(t, "name: x\nsteps: [{id: a, run: x}, {id: b, run: x, needs: []}, {id: c, run: x}]\n", Options{})
	b, c := p.Step("b"), p.Step("c")
	if !b.NeedsSet || b.Needs == nil || len(b.Needs) != 0 {
		t.Errorf("b: NeedsSet %v Needs %#v", b.NeedsSet, b.Needs)
	}
	if c.NeedsSet || c.Needs != nil {
		t.Errorf("c: NeedsSet %v Needs %#v", c.NeedsSet, c.Needs)
	}
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{
			name: "three steps",
			src:  "steps:\n  - {id: a, run: x, needs: [c]}\n  - {id: b, run: x, needs: [a]}\n  - {id: c, run: x, needs: [b]}\n",
			want: []string{`step "a": cycle: a -> c -> b -> a`},
		},
		{
			name: "through implicit dependencies",
			src:  "phases:\n  - {name: one, steps: [{id: a, run: x, needs: [d]}, {id: b, run: x}]}\n  - {name: two, steps: [{id: c, run: x}, {id: d, run: x}]}\n",
			want: []string{`step "a": cycle: a -> d -> c -> a`},
		},
		{
			name: "two separate cycles and a step hanging off one",
			src:  "steps:\n  - {id: a, run: x, needs: [b]}\n  - {id: b, run: x, needs: [a]}\n  - {id: c, run: x, needs: [a, d]}\n  - {id: d, run: x, needs: [e]}\n  - {id: e, run: x, needs: [d]}\n",
			want: []string{`step "a": cycle: a -> b -> a`, `step "d": cycle: d -> e -> d`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, inv := parse(t, "name: x\n"+tt.src, Options{})
			if inv == nil {
				t.Fatal("no error")
			}
			var got []string
			for _, d := range inv.Errors {
				got = append(got, d.Message)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDependentsDownstream(t *testing.T) {
	p := mustParse(t, `name: x
phases:
  - {name: one, steps: [{id: a, run: x}, {id: b, run: x}]}
  - {name: two, parallel: true, steps: [{id: c, run: x}, {id: d, run: x, needs: [a]}]}
  - {name: three, steps: [{id: e, run: x, needs: [c]}, {id: f, run: x, needs: []}]}
end: {run: x}
`, Options{})
	deps := p.Dependents()
	want := map[string][]string{"a": {"b", "c", "d"}, "b": {"c"}, "c": {"e"}}
	if !reflect.DeepEqual(deps, want) {
		t.Errorf("Dependents = %v, want %v", deps, want)
	}
	for _, tt := range []struct {
		in, want []string
	}{
		{[]string{"a"}, []string{"a", "b", "c", "d", "e"}},
		{[]string{"b"}, []string{"b", "c", "e"}},
		{[]string{"e", "d"}, []string{"d", "e"}},
		{[]string{"f", "nope", "end"}, []string{"f"}},
		{nil, []string{}},
	} {
		if got := p.Downstream(tt.in...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Downstream(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if p.Step("d") == nil || p.Step("d").ID != "d" || p.Step("zz") != nil {
		t.Error("Step lookup")
	}
	// Hand-built plans (as in other packages' tests) work without Parse.
	hand := &Plan{Steps: []*Step{{ID: "x", StepBody: &StepBody{}}, {ID: "y", Deps: []string{"x"}, StepBody: &StepBody{}}}}
	if hand.Step("y") == nil || strings.Join(hand.Downstream("x"), ",") != "x,y" {
		t.Error("hand-built plan")
	}
}
