package spec

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// refs builds the Uses a test expects: "a.v", "b.w" -> {a v} {b w}.
func refs(names ...string) []OutputRef {
	var out []OutputRef
	for _, n := range names {
		step, key, _ := strings.Cut(n, ".")
		out = append(out, OutputRef{Step: step, Key: key})
	}
	return out
}

func usesOf(p *Plan, id string) []OutputRef {
	if id == "end" {
		return p.End.Uses
	}
	if s := p.Step(id); s != nil {
		return s.Uses
	}
	return []OutputRef{{Step: "no such step " + id}}
}

// TestOutputUsesValid: plans whose references name upstream steps are
// valid, and each step's Uses lists the references of its attempts' templates.
func TestOutputUsesValid(t *testing.T) {
	head := "name: x\nagent: [a]\n"
	tests := []struct {
		name, src string
		uses      map[string][]OutputRef // step id -> Uses; steps not listed have none
	}{
		{"needs", head + "steps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n  - {id: c, run: 'echo {steps.a.outputs.v}', needs: [a]}\n",
			map[string][]OutputRef{"c": refs("a.v")}},
		{"sequential phase", head + "steps:\n  - {id: a, run: x}\n  - {id: b, run: 'echo {steps.a.outputs.v}'}\n",
			map[string][]OutputRef{"b": refs("a.v")}},
		{"previous phase", head + "phases:\n  - {name: p1, steps: [{id: a, run: x}, {id: b, run: x}]}\n  - {name: p2, parallel: true, steps: [{id: c, run: 'echo {steps.a.outputs.v}'}, {id: d, run: 'echo {steps.b.outputs.w}'}]}\n",
			map[string][]OutputRef{"c": refs("a.v"), "d": refs("b.w")}},
		{"transitive", head + "steps:\n  - {id: a, run: x}\n  - {id: z, run: x, needs: []}\n  - {id: b, run: x, needs: [a]}\n  - {id: c, run: 'echo {steps.a.outputs.v}', needs: [b, z]}\n",
			map[string][]OutputRef{"c": refs("a.v")}},
		{"forward need", head + "steps:\n  - {id: c, run: 'echo {steps.a.outputs.v}', needs: [b]}\n  - {id: b, run: x, needs: [a]}\n  - {id: a, run: x, needs: []}\n",
			map[string][]OutputRef{"c": refs("a.v")}},
		{"ids with - and _", head + "steps:\n  - {id: a-b, run: x}\n  - {id: a_b, run: x}\n  - {id: c, run: 'echo {steps.a-b.outputs.v} {steps.a_b.outputs.v}'}\n",
			map[string][]OutputRef{"c": refs("a-b.v", "a_b.v")}},
		{"through a fan-out", head + "steps:\n  - {id: a, run: x}\n  - {id: f, foreach: [1, 2], run: 'w {item}'}\n  - {id: c, run: 'echo {steps.a.outputs.v}', needs: [f]}\n",
			map[string][]OutputRef{"c": refs("a.v")}},
		{"fan-out items", head + "steps:\n  - {id: a, run: x}\n  - {id: f, foreach: [1, 2], run: 'w {item} {steps.a.outputs.v}'}\n",
			map[string][]OutputRef{"f[1]": refs("a.v"), "f[2]": refs("a.v"), "f": refs("a.v")}},
		{"item of an item-wise need", head + "steps:\n  - {id: a, run: x}\n  - {id: f, foreach: [1, 2], run: 'w {item}', needs: [a]}\n  - {id: g, foreach: [1, 2], run: 'w {steps.a.outputs.v}', needs: ['f[{item}]']}\n",
			map[string][]OutputRef{"g[1]": refs("a.v"), "g[2]": refs("a.v"), "g": refs("a.v")}},
		{"end step", head + "steps:\n  - {id: a, run: x, needs: []}\n  - {id: b, run: x, needs: []}\nend:\n  run: 'echo {steps.b.outputs.w} {steps.a.outputs.v}'\n",
			map[string][]OutputRef{"end": refs("b.w", "a.v")}},
		{"every template, once, in order", head + "steps:\n  - {id: a, run: x}\n  - {id: b, run: x, needs: [a]}\n  - id: c\n    needs: [b]\n    env: {E: '{steps.a.outputs.e}', F: '{steps.b.outputs.v}'}\n    dir: 'out/{steps.a.outputs.d}'\n    run: 'echo {steps.b.outputs.v} {steps.a.outputs.r} {steps.b.outputs.v}'\n",
			map[string][]OutputRef{"c": refs("a.e", "b.v", "a.d", "a.r")}},
		{"command run", head + "steps:\n  - {id: a, run: x}\n  - {id: b, run: '/fix --v {steps.a.outputs.v}'}\n",
			map[string][]OutputRef{"b": refs("a.v")}},
		{"handlers not in uses", head + "failure_handlers: [{name: h, rules: [{exit_codes: [1], recovery_script: 'echo {steps.a.outputs.r}'}]}]\nsteps:\n  - {id: a, run: x}\n  - id: b\n    run: x\n    failure_handler: h\n    result_handling: {on_failure: {command: /fix, args: {v: '{steps.a.outputs.v}'}}}\n  - id: c\n    run: x\n    result_handling: {on_failure: '/fix {steps.a.outputs.w}'}\n",
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.src, Options{})
			for _, s := range append(append([]*Step(nil), p.Steps...), p.End) {
				if s == nil {
					continue
				}
				if want := tt.uses[s.ID]; !reflect.DeepEqual(s.Uses, want) {
					t.Errorf("step %q: Uses = %v, want %v", s.ID, s.Uses, want)
				}
			}
		})
	}
}

// TestOutputUsesSubPlan: a plan: step's context values are its attempts'.
func TestOutputUsesSubPlan(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "child.yaml"), "name: c\nsteps: [{id: s, run: 'echo {table}'}]\n", 0o644)
	p, inv := parseAt(t, filepath.Join(dir, "plan.yaml"), "name: x\nsteps:\n  - {id: a, run: x}\n  - {id: b, plan: child.yaml, context: {table: '{steps.a.outputs.t}'}}\n", Options{})
	if inv != nil {
		t.Fatal(diagText(inv.Errors))
	}
	if got := usesOf(p, "b"); !reflect.DeepEqual(got, refs("a.t")) {
		t.Errorf("Uses = %v", got)
	}
}

// TestOutputUsesDynamicItems: the items of a glob:/lines: fan-out, made when
// it runs (SetItems), use what its template uses.
func TestOutputUsesDynamicItems(t *testing.T) {
	p := mustParse(t, "name: x\nsteps:\n  - {id: a, run: x}\n  - {id: f, foreach: {glob: '*.csv'}, run: 'w {item} {steps.a.outputs.v}'}\n", Options{})
	f := p.Step("f")
	p.SetItems(f, []string{"x.csv", "y.csv"})
	for _, id := range []string{"f[x.csv]", "f[y.csv]"} {
		if got := usesOf(p, id); !reflect.DeepEqual(got, refs("a.v")) {
			t.Errorf("%s: Uses = %v", id, got)
		}
	}
}

func TestOutputUsesErrors(t *testing.T) {
	head := "name: x\nagent: [a]\n"
	tests := []struct {
		name, src, want string
	}{
		{"unknown step", head + "steps:\n  - {id: build, run: x}\n  - {id: b, run: 'echo {steps.biuld.outputs.v}'}\n",
			`plan.yaml:5:24: step "b": {steps.biuld.outputs.v}: unknown step "biuld" (did you mean "build"?)`},
		{"not upstream, needs", head + "steps:\n  - {id: a, run: x}\n  - {id: c, run: x, needs: []}\n  - {id: b, run: 'echo {steps.c.outputs.v}', needs: [a]}\n",
			`plan.yaml:6:24: step "b": {steps.c.outputs.v}: step "c" is not upstream of "b"; add "c" to its needs`},
		{"not upstream, phase", head + "phases:\n  - {name: p1, steps: [{id: a, run: x}]}\n  - {name: p2, parallel: true, steps: [{id: b, run: x}, {id: c, run: 'echo {steps.b.outputs.v}'}]}\n",
			`plan.yaml:5:76: step "c": {steps.b.outputs.v}: step "b" is not upstream of "c"; add needs: [a, b]`},
		{"downstream", head + "steps:\n  - {id: a, run: 'echo {steps.b.outputs.v}'}\n  - {id: b, run: x}\n",
			`plan.yaml:4:24: step "a": {steps.b.outputs.v}: step "b" is not upstream of "a": it depends on "a", so it runs after it`},
		{"first step", head + "steps:\n  - {id: a, run: 'echo {steps.b.outputs.v}'}\n  - {id: b, run: x, needs: []}\n",
			`plan.yaml:4:24: step "a": {steps.b.outputs.v}: step "b" is not upstream of "a"; add needs: [b]`},
		{"fan-out", head + "steps:\n  - {id: f, foreach: [1, 2], run: 'w {item}'}\n  - {id: b, run: 'echo {steps.f.outputs.v}'}\n",
			`plan.yaml:5:24: step "b": {steps.f.outputs.v}: step "f" is a fan-out; it runs no process and publishes no outputs (its items run)`},
		{"fan-out item not upstream", head + "steps:\n  - {id: a, run: x, needs: []}\n  - {id: f, foreach: [1, 2], run: 'w {item} {steps.a.outputs.v}', needs: []}\n",
			`plan.yaml:5:45: step "f": {steps.a.outputs.v}: step "a" is not upstream of "f"; add "a" to its needs`},
		{"sub-plan", head + "steps:\n  - {id: s, plan: child.yaml}\n  - {id: b, run: 'echo {steps.s.outputs.v}'}\n",
			`plan.yaml:5:24: step "b": {steps.s.outputs.v}: step "s" is a plan: step; it runs no process and publishes no outputs`},
		{"self", head + "steps:\n  - {id: a, run: 'echo {steps.a.outputs.v}'}\n",
			`plan.yaml:4:24: step "a": {steps.a.outputs.v}: the step cannot use its own outputs`},
		{"end step referenced", head + "steps:\n  - {id: a, run: 'echo {steps.end.outputs.v}'}\nend: {run: x}\n",
			`plan.yaml:4:24: step "a": {steps.end.outputs.v}: the end step runs last and publishes no outputs`},
		{"end step self", head + "steps:\n  - {id: a, run: x}\nend: {run: 'echo {steps.end.outputs.v}'}\n",
			`plan.yaml:5:18: end step: {steps.end.outputs.v}: the step cannot use its own outputs`},
		{"end step unknown", head + "steps:\n  - {id: build, run: x}\nend: {run: 'echo {steps.buidl.outputs.v}'}\n",
			`plan.yaml:5:18: end step: {steps.buidl.outputs.v}: unknown step "buidl" (did you mean "build"?)`},
		{"env", head + "steps:\n  - {id: a, run: x, needs: []}\n  - {id: b, run: x, needs: []}\n  - id: c\n    run: x\n    env: {A: 'x{steps.b.outputs.v}'}\n    needs: [a]\n",
			`plan.yaml:8:16: step "c": {steps.b.outputs.v}: step "b" is not upstream of "c"; add "b" to its needs`},
		{"dir", head + "steps:\n  - {id: a, run: x, needs: []}\n  - id: c\n    run: x\n    dir: 'out/{steps.a.outputs.v}'\n    needs: []\n",
			`plan.yaml:7:15: step "c": {steps.a.outputs.v}: step "a" is not upstream of "c"; add "a" to its needs`},
		{"literal block ref", head + "steps:\n  - {id: a, run: x, needs: []}\n  - id: c\n    needs: []\n    run: |\n      echo hi\n      echo {steps.a.outputs.v}\n",
			`plan.yaml:9:12: step "c": {steps.a.outputs.v}: step "a" is not upstream of "c"; add "a" to its needs`},
		{"on_failure", head + "steps:\n  - {id: a, run: x}\n  - id: c\n    run: x\n    result_handling: {on_failure: '/fix {steps.zz.outputs.v}'}\n",
			`plan.yaml:7:41: step "c": on_failure: {steps.zz.outputs.v}: unknown step "zz"`},
		{"on_failure args", head + "steps:\n  - {id: a, run: x, needs: []}\n  - id: c\n    run: x\n    needs: []\n    result_handling: {on_failure: {command: /fix, args: {p: '{steps.a.outputs.v}'}}}\n",
			`plan.yaml:8:62: step "c": on_failure: {steps.a.outputs.v}: step "a" is not upstream of "c"; add "a" to its needs`},
		{"recovery script", head + "failure_handlers: [{name: h, rules: [{exit_codes: [1], recovery_script: 'x {steps.a.outputs.v}'}]}]\nsteps:\n  - {id: a, run: x, needs: []}\n  - {id: c, run: x, needs: [], failure_handler: h}\n",
			`plan.yaml:3:76: step "c": failure handler "h": rules[0]: recovery_script: {steps.a.outputs.v}: step "a" is not upstream of "c"; add "a" to its needs`},
		{"plan env", head + "env: {A: '{steps.a.outputs.v}'}\nsteps:\n  - {id: a, run: x}\n",
			`plan.yaml:3:11: env: {steps.a.outputs.v}: the plan's env is every step's and cannot use step outputs`},
		{"commands entry", head + "commands: {/x: 'sh {steps.a.outputs.v}'}\nsteps:\n  - {id: a, run: x}\n",
			`plan.yaml:3:20: commands: /x: {steps.a.outputs.v}: a commands: entry cannot use step outputs`},
		{"cache inputs", head + "steps:\n  - {id: a, run: x}\n  - {id: b, run: x, inputs: ['{steps.a.outputs.v}']}\n",
			`plan.yaml:5:31: step "b": {steps.a.outputs.v}: step outputs cannot be used here`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "child.yaml"), "name: c\nsteps: [{id: s, run: x}]\n", 0o644)
			_, inv := parseAt(t, filepath.Join(dir, "plan.yaml"), tt.src, Options{})
			if inv == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			got := inv.Errors[0]
			got.File = filepath.Base(got.File)
			if !strings.HasPrefix(got.Error(), tt.want) {
				t.Errorf("first error:\n got %s\nwant %s\nall:\n%s", got.Error(), tt.want, diagText(inv.Errors))
			}
			if len(inv.Errors) != 1 {
				t.Errorf("%d errors, want 1:\n%s", len(inv.Errors), diagText(inv.Errors))
			}
			if strings.Contains(got.Message, "\n") {
				t.Errorf("message spans lines: %q", got.Message)
			}
			// The position is the reference's {.
			_, ref, _ := strings.Cut(got.Message, ": {")
			ref, _, _ = strings.Cut(ref, "}")
			if lines := strings.Split(tt.src, "\n"); ref != "" && got.Line > 0 && got.Line <= len(lines) {
				if line := []rune(lines[got.Line-1]); got.Col < 1 || got.Col > len(line) || !strings.HasPrefix(string(line[got.Col-1:]), "{"+ref+"}") {
					t.Errorf("%d:%d is not the { of {%s} in %q", got.Line, got.Col, ref, string(line))
				}
			}
		})
	}
}

// TestOutputUsesCycle: with a cycle, only the cycle is reported.
func TestOutputUsesCycle(t *testing.T) {
	_, inv := parse(t, "name: x\nsteps:\n  - {id: a, run: 'echo {steps.b.outputs.v}', needs: [b]}\n  - {id: b, run: 'echo {steps.c.outputs.v}', needs: [a]}\n  - {id: c, run: x, needs: []}\n", Options{})
	if inv == nil || len(inv.Errors) != 1 || !strings.Contains(inv.Errors[0].Message, "cycle: a -> b -> a") {
		t.Fatalf("got %v", inv)
	}
}

// TestOutputUsesLinear: checking references takes steps linear in the
// plan's steps (counted, not timed) for the usual shapes: every step using
// the first one's output, each using the one before's, and a parallel
// phase whose steps each use the output of their counterpart in the
// phase before; and one search per step used, not per use, for uses that
// are not direct dependencies.
func TestOutputUsesLinear(t *testing.T) {
	dir := t.TempDir()
	ops := func(data []byte) int {
		p := &parser{file: filepath.Join(dir, "plan.yaml"), data: data, tables: map[reflect.Type]*fieldTable{}}
		if _, err := p.parse(); err != nil {
			t.Fatal(err)
		}
		return p.ops
	}
	check := func(what string, gen func(n int) string) {
		small, big := ops([]byte(gen(1000))), ops([]byte(gen(8000)))
		if big > 12*small {
			t.Errorf("%s: %d steps for n=1000, %d for n=8000 (%.1f×; linear is 8×)", what, small, big, float64(big)/float64(small))
		}
		t.Logf("%s: %d steps for n=1000, %d for n=8000 (%.1f×)", what, small, big, float64(big)/float64(small))
	}
	check("all use the first", func(n int) string {
		var b strings.Builder
		b.WriteString("name: big\nsteps:\n  - {id: s0, run: x}\n")
		for i := 1; i < n; i++ {
			b.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: 'echo {steps.s0.outputs.v}'}\n")
		}
		return b.String()
	})
	check("each uses the one before", func(n int) string {
		var b strings.Builder
		b.WriteString("name: big\nsteps:\n  - {id: s0, run: x}\n")
		for i := 1; i < n; i++ {
			b.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: 'echo {steps.s" + strconv.Itoa(i-1) + ".outputs.v}'}\n")
		}
		return b.String()
	})
	check("each uses the one three before", func(n int) string {
		var b strings.Builder
		b.WriteString("name: big\nsteps:\n  - {id: s0, run: x}\n  - {id: s1, run: x}\n  - {id: s2, run: x}\n")
		for i := 3; i < n; i++ {
			b.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: 'echo {steps.s" + strconv.Itoa(i-3) + ".outputs.v}'}\n")
		}
		return b.String()
	})
	check("each uses one of the phase before", func(n int) string {
		var b strings.Builder
		b.WriteString("name: big\nphases:\n  - name: one\n    parallel: true\n    steps:\n")
		for i := 0; i < n; i++ {
			b.WriteString("      - {id: a" + strconv.Itoa(i) + ", run: x}\n")
		}
		b.WriteString("  - name: two\n    parallel: true\n    steps:\n")
		for i := 0; i < n; i++ {
			b.WriteString("      - {id: b" + strconv.Itoa(i) + ", run: 'echo {steps.a" + strconv.Itoa(i) + ".outputs.v}'}\n")
		}
		return b.String()
	})
}
