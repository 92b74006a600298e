package spec

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// needsPlan is a plan of about 3n steps whose dependencies are all written
// out: a chain of n steps (each needs the one before and the one three
// before), a fan-out of n items, a second fan-out whose items each need
// their item of the first (f[{item}]), and a step that needs each of the n
// items of the second by name.
func needsPlan(n int) []byte {
	var b strings.Builder
	b.WriteString("name: big\nsteps:\n")
	for i := 0; i < n; i++ {
		b.WriteString("  - id: c" + strconv.Itoa(i) + "\n    run: w\n")
		if i > 2 {
			b.WriteString("    needs: [c" + strconv.Itoa(i-1) + ", c" + strconv.Itoa(i-3) + "]\n")
		}
	}
	b.WriteString("  - {id: f, foreach: {range: [1, " + strconv.Itoa(n) + "]}, run: 'w {item}'}\n")
	b.WriteString("  - {id: g, foreach: {range: [1, " + strconv.Itoa(n) + "]}, run: 'w {item}', needs: ['f[{item}]', c0]}\n")
	b.WriteString("  - id: z\n    run: w\n    needs: [c1")
	for i := 1; i <= n; i++ {
		b.WriteString(", 'g[" + strconv.Itoa(i) + "]'")
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// TestNeedsLinear: resolving written needs, item-wise needs included,
// takes steps linear in the steps and needs (counted, not timed). A step
// needing n items by name used to compare each with those before: n².
// So did a plan with n needs of unknown steps, each suggestion comparing
// the name with every id, and a matrix of n items with n/2 exclude
// entries, each item compared with each entry.
func TestNeedsLinear(t *testing.T) {
	dir := t.TempDir()
	ops := func(data []byte, valid bool) int {
		p := &parser{file: filepath.Join(dir, "plan.yaml"), data: data, tables: map[reflect.Type]*fieldTable{}}
		_, err := p.parse()
		if (err == nil) != valid {
			t.Fatalf("valid %v: %v", valid, err)
		}
		return p.ops
	}
	check := func(what string, gen func(int) []byte, valid bool) {
		small, big := ops(gen(1000), valid), ops(gen(8000), valid)
		// Linear: 8×; quadratic: 64×.
		if big > 12*small {
			t.Errorf("%s: %d steps for n=1000, %d for n=8000 (%.1f×; linear is 8×)", what, small, big, float64(big)/float64(small))
		}
		t.Logf("%s: %d steps for n=1000, %d for n=8000 (%.1f×)", what, small, big, float64(big)/float64(small))
	}
	check("written needs", needsPlan, true)
	check("matrix exclude", func(n int) []byte {
		var b strings.Builder
		b.WriteString("name: m\nsteps:\n  - id: m\n    run: 'w {item.a}'\n    matrix:\n      a: [")
		for i := 0; i < n; i++ {
			b.WriteString(strconv.Itoa(i) + ", ")
		}
		b.WriteString("x]\n      exclude:\n")
		for i := 0; i < n; i += 2 {
			b.WriteString("        - {a: " + strconv.Itoa(i) + "}\n")
		}
		return []byte(b.String())
	}, true)
	check("unknown needs", func(n int) []byte {
		var b strings.Builder
		b.WriteString("name: bad\nsteps:\n")
		for i := 0; i < n; i++ {
			b.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: w, needs: [x" + strconv.Itoa(i) + "]}\n")
		}
		return []byte(b.String())
	}, false)
}

// TestSetItemsAllOnePass: giving several dynamic fan-outs their items at
// once gives the plan that one SetItems after another gives.
func TestSetItemsAllOnePass(t *testing.T) {
	src := []byte("name: d\nphases:\n  - name: a\n    steps:\n      - {id: x, run: w}\n      - {id: g, foreach: {glob: '*.a'}, run: 'w {item}', needs: [x]}\n" +
		"  - name: b\n    parallel: true\n    steps:\n      - {id: h, foreach: {lines: l.txt}, run: 'w {item}'}\n      - {id: y, run: w, needs: [g, h]}\n")
	file := filepath.Join(t.TempDir(), "plan.yaml")
	one, err := Parse(file, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := Parse(file, src, Options{})
	vals := map[string][]string{"g": {"1.a", "2.a"}, "h": {"p", "q", "r"}}
	for _, id := range []string{"g", "h"} {
		one.SetItems(one.Step(id), vals[id])
	}
	all.SetItemsAll(map[*Step][]string{all.Step("g"): vals["g"], all.Step("h"): vals["h"]})
	// and again, with items that change: kept ones stay, others go
	vals2 := map[string][]string{"g": {"2.a", "3.a"}, "h": {"q"}}
	for _, id := range []string{"g", "h"} {
		one.SetItems(one.Step(id), vals2[id])
	}
	all.SetItemsAll(map[*Step][]string{all.Step("g"): vals2["g"], all.Step("h"): vals2["h"]})
	shape := func(p *Plan) string {
		var b strings.Builder
		for i, s := range p.Steps {
			if s.Index != i || p.Step(s.ID) != s {
				t.Errorf("step %s: index %d at %d, or not found by id", s.ID, s.Index, i)
			}
			b.WriteString(s.ID + "<" + strings.Join(s.Deps, ",") + "> ")
		}
		for _, ph := range p.Phases {
			b.WriteString("|")
			for _, s := range ph.Steps {
				b.WriteString(" " + s.ID)
			}
		}
		return b.String()
	}
	if a, b := shape(one), shape(all); a != b {
		t.Errorf("SetItems one by one:\n%s\nSetItemsAll:\n%s", a, b)
	} else {
		t.Log(a)
	}
}

// TestMatrixExclude: an item is excluded when some exclude entry's every
// name has the item's value, checked by lookups in groups of entries
// (entries with the same names): the same as comparing each entry.
func TestMatrixExclude(t *testing.T) {
	old := func(f map[string]string, exclude []map[string]string) bool {
		for _, ex := range exclude {
			all := len(ex) > 0
			for k, v := range ex {
				if f[k] != v {
					all = false
					break
				}
			}
			if all {
				return true
			}
		}
		return false
	}
	exclude := []map[string]string{
		{"a": "1"}, {"a": "2", "b": "x"}, {"b": "y", "a": "3"}, {}, {"c": ""}, {"a": "1:2"}, {"b": "x\x00"},
	}
	ex := newExclusions(exclude)
	if len(ex.groups) != 4 {
		t.Errorf("%d groups, want 4 (a; a,b; c; b)", len(ex.groups))
	}
	for _, a := range []string{"1", "2", "3", "1:2", "", "12"} {
		for _, b := range []string{"x", "y", "", "x\x00"} {
			for _, f := range []map[string]string{{"a": a, "b": b}, {"a": a, "b": b, "c": "z"}} {
				if got, want := excluded(f, ex), old(f, exclude); got != want {
					t.Errorf("%q: excluded %v, want %v", f, got, want)
				}
			}
		}
	}
}

// TestPlanItemsBounded: a few lines of fan-outs must not make millions of
// steps: MaxPlanItems in all, one error.
func TestPlanItemsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\nsteps:\n")
	for i := 0; i < 12; i++ {
		b.WriteString("  - {id: f" + strconv.Itoa(i) + ", foreach: {range: [1, 100000]}, run: 'w {item}'}\n")
	}
	_, err := Parse(filepath.Join(t.TempDir(), "plan.yaml"), []byte(b.String()), Options{})
	inv, ok := err.(*Invalid)
	if !ok || len(inv.Errors) != 1 || !strings.Contains(inv.Errors[0].Message, `step "f10": the plan's fan-outs have more than 1000000 items in all; at most 1000000`) {
		t.Fatalf("err = %v", err)
	}
}
