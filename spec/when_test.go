package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestCompileWhenNames(t *testing.T) {
	w, err := CompileWhen(`steps.check.outputs.changed == "yes" && steps["a-b"].status != "failure" || context.table == "x" && steps.check.status == "success"`)
	if err != nil {
		t.Fatal(err)
	}
	steps := []WhenName{{"check", 0}, {"a-b", 40}}
	if !reflect.DeepEqual(w.Steps, steps) {
		t.Errorf("Steps = %v, want %v", w.Steps, steps)
	}
	if want := []OutputRef{{"check", "changed"}}; !reflect.DeepEqual(w.Uses, want) {
		t.Errorf("Uses = %v, want %v", w.Uses, want)
	}
	if len(w.Context) != 1 || w.Context[0].Name != "table" || w.Item != -1 {
		t.Errorf("Context = %v, Item = %d", w.Context, w.Item)
	}
}

func TestWhenEval(t *testing.T) {
	env := WhenEnv{
		Steps:   map[string]WhenStep{"a": {Status: "success", Outputs: map[string]string{"n": "3", "s": "yes"}}, "b": {Status: "skipped"}},
		Context: map[string]string{"mode": "fast"},
		Item:    map[string]string{"os": "linux"},
	}
	for src, want := range map[string]bool{
		`steps.a.outputs.s == "yes"`:                   true,
		`int(steps.a.outputs.n) > 2`:                   true,
		`steps.b.status == "skipped"`:                  true,
		`context.mode != "fast"`:                       false,
		`item.os == "linux" && context.mode == "fast"`: true,
		`steps.a.outputs.s in ["no", "maybe"]`:         false,
	} {
		w, err := CompileWhen(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := w.Eval(env)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
	// An error at run time is an error, never false.
	w, err := CompileWhen(`int(steps.a.outputs.s) > 1`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Eval(env); err == nil || !strings.HasPrefix(err.Error(), "when: ") {
		t.Errorf("a conversion that fails: %v", err)
	}
}

func TestCompileWhenErrors(t *testing.T) {
	for src, want := range map[string]string{
		``:                        "the condition is empty",
		`steps.a.status ==`:       "unexpected token EOF",
		`steps.a.outputs.v`:       "expected bool, but got string",
		`foo == 1`:                "unknown name foo",
		`steps.a.outptus.v == ""`: "type spec.WhenStep has no field outptus",
	} {
		_, err := CompileWhen(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", src, err, want)
		}
	}
}
