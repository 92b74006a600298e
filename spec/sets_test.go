package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnusedSets: a --set key is fine when the plan declares it in context:
// or some {name} of the plan uses it (wherever substitution applies), and
// otherwise a warning (an error under Strict) with a did-you-mean.
func TestUnusedSets(t *testing.T) {
	const head = "name: x\ncontext: {table: hd}\n"
	tests := []struct {
		name, body, key, want string
	}{
		{"declared", "steps: [{id: s, run: 'true'}]\n", "table", ""},
		{"run", "steps: [{id: s, run: 'echo {k}'}]\n", "k", ""},
		{"env", "steps: [{id: s, run: 'true', env: {A: '{k}'}}]\n", "k", ""},
		{"plan env", "env: {A: '{k}'}\nsteps: [{id: s, run: 'true'}]\n", "k", ""},
		{"dir", "steps: [{id: s, run: 'true', dir: '{k}'}]\n", "k", ""},
		{"handler", "steps: [{id: s, run: 'true', result_handling: {on_failure: '/bin/echo {k}'}}]\n", "k", ""},
		{"commands entry", "commands: {/c: '/bin/echo {k}'}\nsteps: [{id: s, run: 'true'}]\n", "k", ""},
		{"recovery", "failure_handlers: [{name: h, rules: [{exit_codes: [1], recovery_script: 'echo {k}'}]}]\nsteps: [{id: s, run: 'true', failure_handler: h}]\n", "k", ""},
		{"secrets", "secrets: [k]\nsteps: [{id: s, run: 'true'}]\n", "k", ""},
		{"misspelt", "steps: [{id: s, run: 'echo {table}'}]\n", "tabel",
			`--set tabel: not a context variable of the plan (did you mean "table"?)`},
		{"unused", "steps: [{id: s, run: 'echo $FABER_CTX_MODE'}]\n", "mode",
			"--set mode: not a context variable of the plan and no {mode} uses it (declare it in context: if a script reads $FABER_CTX_MODE)"},
		{"item is no context use", "steps: [{id: s, foreach: [a], run: 'echo {item}'}]\n", "tabel",
			`--set tabel: not a context variable of the plan (did you mean "table"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Sets: map[string]string{tt.key: "v"}, SetKeys: []string{tt.key}}
			p := mustParse(t, head+tt.body, opts)
			got := ""
			for _, w := range p.Warnings {
				if strings.Contains(w.Message, "--set") {
					got = w.Message
				}
			}
			if got != tt.want {
				t.Fatalf("warning:\n got %q\nwant %q", got, tt.want)
			}
			if p.Context[tt.key] != "v" {
				t.Errorf("the key is not set: %v", p.Context)
			}
			opts.Strict = true
			_, inv := parse(t, head+tt.body, opts)
			switch {
			case tt.want == "" && inv != nil:
				t.Errorf("strict: unexpected errors:\n%s", diagText(inv.Errors))
			case tt.want != "" && (inv == nil || inv.Errors[0].Message != tt.want):
				t.Errorf("strict: want the error %q, got %v", tt.want, inv)
			}
		})
	}
}

// TestUnusedSubPlanContext: a plan: step's context: keys are checked against
// the child plan like --set keys; under Strict an unused one invalidates the
// parent.
func TestUnusedSubPlanContext(t *testing.T) {
	dir := t.TempDir()
	child := "name: c\ncontext: {table: hd}\nsteps: [{id: s, run: 'echo {table}'}]\n"
	if err := os.WriteFile(filepath.Join(dir, "child.yaml"), []byte(child), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := "name: p\nsteps: [{id: c, plan: child.yaml, context: {tabel: x}}]\n"
	file := filepath.Join(dir, "plan.yaml")
	if _, inv := parseAt(t, file, parent, Options{}); inv != nil {
		t.Fatalf("not strict: unexpected errors:\n%s", diagText(inv.Errors))
	}
	_, inv := parseAt(t, file, parent, Options{Strict: true})
	want := `step "c": plan child.yaml: context tabel: not a context variable of the plan (did you mean "table"?)`
	if inv == nil || !strings.HasSuffix(inv.Errors[0].Message, want) {
		t.Fatalf("strict: want %q, got %v", want, inv)
	}
}
