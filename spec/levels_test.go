package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestLevels(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // levels separated by " | ", steps by ","
	}{
		{
			name: "sequential steps, one per level",
			src:  "steps: [{id: a, run: x}, {id: b, run: x}, {id: c, run: x}]",
			want: "a | b | c",
		},
		{
			name: "a parallel phase is one level",
			src: `phases:
  - {name: one, steps: [{id: a, run: x}]}
  - {name: two, parallel: true, steps: [{id: b, run: x}, {id: c, run: x}, {id: d, run: x}]}
  - {name: three, steps: [{id: e, run: x}]}`,
			want: "a | b,c,d | e",
		},
		{
			name: "a step sits one level after its latest dependency",
			src: `steps:
  - {id: a, run: x}
  - {id: b, run: x}
  - {id: c, run: x, needs: [a]}
  - {id: d, run: x, needs: [a, b]}`,
			want: "a | b,c | d",
		},
		{
			name: "needs a later step: order follows dependencies, not the file",
			src: `steps:
  - {id: a, run: x, needs: [c]}
  - {id: b, run: x, needs: [a]}
  - {id: c, run: x, needs: []}`,
			want: "c | a | b",
		},
		{
			name: "independent steps share the first level, in plan order",
			src: `steps:
  - {id: z, run: x, needs: []}
  - {id: y, run: x, needs: []}
  - {id: w, run: x, needs: [y, z]}`,
			want: "z,y | w",
		},
		{
			name: "diamond",
			src: `steps:
  - {id: top, run: x}
  - {id: left, run: x, needs: [top]}
  - {id: right, run: x, needs: [top]}
  - {id: deep, run: x, needs: [right]}
  - {id: bottom, run: x, needs: [left, deep]}`,
			want: "top | left,right | deep | bottom",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "name: x\n"+tt.src+"\nend: {run: x}\n", Options{})
			if got := levelString(p.Levels()); got != tt.want {
				t.Errorf("Levels() = %q, want %q", got, tt.want)
			}
		})
	}
}

// A hand-built plan with a cycle (validation rejects one) still returns
// every step: the cycle comes last; unknown ids are ignored.
func TestLevelsCycleAndUnknown(t *testing.T) {
	p := &Plan{Steps: []*Step{
		{ID: "a", StepBody: &StepBody{}},
		{ID: "b", Deps: []string{"c", "ghost"}, StepBody: &StepBody{}},
		{ID: "c", Deps: []string{"b"}, StepBody: &StepBody{}},
		{ID: "d", Deps: []string{"a", "a"}, StepBody: &StepBody{}},
	}}
	if got, want := levelString(p.Levels()), "a | d | b,c"; got != want {
		t.Errorf("Levels() = %q, want %q", got, want)
	}
	if got := (&Plan{}).Levels(); !reflect.DeepEqual(got, [][]*Step{}) {
		t.Errorf("empty plan: Levels() = %v, want none", got)
	}
}

func levelString(levels [][]*Step) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		ids := make([]string, len(l))
		for j, s := range l {
			ids[j] = s.ID
		}
		parts[i] = strings.Join(ids, ",")
	}
	return strings.Join(parts, " | ")
}
