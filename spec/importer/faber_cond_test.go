package importer

import (
	"strings"
	"testing"
)

// TestFaberConditional: only_if_failures tests every step before it in its
// phase (pre_steps, steps, post_steps, in that order), not those of other
// phases; steps that already say what a failure does keep it.
func TestFaberConditional(t *testing.T) {
	in := `{
  "id": "p",
  "workflow": {"phases": {
    "build": {"steps": [{"id": "b", "prompt": "b"}]},
    "evaluate": {
      "pre_steps": [{"id": "lint", "prompt": "lint", "result_handling": {"on_failure": "/fix-lint"}}],
      "steps": [{"id": "test", "prompt": "t", "result_handling": {"max_retries": 2}}],
      "post_steps": [{"id": "fix", "prompt": "f", "conditional": "only_if_failures"}]
    }
  }}
}`
	out, warns, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"      - id: evaluate-lint\n        run: /prompt lint\n        result_handling:\n          on_failure: /fix-lint\n",
		"      - id: evaluate-test\n        run: /prompt t\n        result_handling:\n          max_retries: 2\n          on_failure: continue\n",
		"      - id: evaluate-fix\n        run: /prompt f\n        when: steps[\"evaluate-lint\"].status == \"failure\" || steps[\"evaluate-test\"].status == \"failure\"\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "build-b\n        run: /prompt b\n        result_handling") {
		t.Errorf("a step of another phase was changed:\n%s", out)
	}
	if got := strings.Join(warns, "\n"); !strings.Contains(got, "plan.json:8:51: phase evaluate: step \"fix\": conditional: only_if_failures: step(s) evaluate-test now go on after a failure") {
		t.Errorf("warnings: %s", got)
	}
}
