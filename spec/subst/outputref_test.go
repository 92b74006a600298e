package subst

import (
	"os/exec"
	"strings"
	"testing"
)

func TestOutputRefNames(t *testing.T) {
	for _, tc := range []struct{ name, step, key string }{
		{"steps.a.outputs.v", "a", "v"},
		{"steps.build-x_1.outputs.VERSION_2", "build-x_1", "VERSION_2"},
		{"steps.v1.2.outputs.v", "v1.2", "v"},
		{"steps.a.outputs.b.outputs.k", "a.outputs.b", "k"},
	} {
		step, key, ok := OutputRef(tc.name)
		if !ok || step != tc.step || key != tc.key {
			t.Errorf("OutputRef(%q) = %q, %q, %v", tc.name, step, key, ok)
		}
		if got := OutputName(tc.step, tc.key); got != tc.name {
			t.Errorf("OutputName = %q, want %q", got, tc.name)
		}
		refs := Names("x {" + tc.name + "} y")
		if len(refs) != 1 || refs[0].Name != tc.name || refs[0].Offset != 2 {
			t.Errorf("Names: %+v", refs)
		}
	}
	for _, bad := range []string{"steps.a.outputs.", "steps..outputs.v", "steps.a.outputs.v.w", "steps.a.outputs.v-w", "steps.a.output.v", "steps.a.outputs.1v", "steps.a b.outputs.v", "step.a.outputs.v"} {
		if _, _, ok := OutputRef(bad); ok {
			t.Errorf("OutputRef(%q) accepted", bad)
		}
		if refs := Names("{" + bad + "}"); len(refs) != 0 {
			t.Errorf("Names(%q) = %+v, want none (literal text)", bad, refs)
		}
	}
}

// Two ids that differ only in '-' and '_' hand their values through
// different variables, and every form of template gets the exact value.
func TestOutputRefValues(t *testing.T) {
	vars := map[string]string{
		OutputName("a-b", "v"):  "dash; $(echo no)",
		OutputName("a_b", "v"):  "under 'q' \"x\"",
		OutputName("a_db", "v"): "third",
		OutputName("a.b", "v"):  "dotted",
	}
	got, err := Expand("{steps.a-b.outputs.v}|{steps.a_b.outputs.v}|{steps.a_db.outputs.v}|{steps.a.b.outputs.v}", vars)
	if want := "dash; $(echo no)|under 'q' \"x\"|third|dotted"; err != nil || got != want {
		t.Fatalf("Expand = %q, %v; want %q", got, err, want)
	}
	argv, err := Argv("/x --a {steps.a-b.outputs.v} --b={steps.a_b.outputs.v}", vars)
	if err != nil || len(argv) != 4 || argv[2] != vars[OutputName("a-b", "v")] || argv[3] != "--b="+vars[OutputName("a_b", "v")] {
		t.Fatalf("Argv = %q, %v", argv, err)
	}
	script, env, err := Script(`printf '%s|%s|%s|%s' {steps.a-b.outputs.v} "{steps.a_b.outputs.v}" {steps.a_db.outputs.v} {steps.a.b.outputs.v}`, vars)
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 4 {
		t.Fatalf("env = %q, want three distinct variables", env)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = env
	out, err := cmd.Output()
	if want := strings.Join([]string{vars[OutputName("a-b", "v")], vars[OutputName("a_b", "v")], "third", "dotted"}, "|"); err != nil || string(out) != want {
		t.Fatalf("script %q printed %q (%v), want %q", script, out, err, want)
	}
}
