package importer

import (
	"bytes"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestEncodePlanSameText: writing the plan a pair and an item at a time
// gives the text of one Encode of the whole plan.
func TestEncodePlanSameText(t *testing.T) {
	for _, tc := range []struct {
		f  Format
		in string
	}{
		{FormatTorc, string(TorcChain(30))},
		{FormatTorc, "name: n\nfailure_handlers: [{name: h, rules: [{exit_codes: [1], recovery_script: \"a\\nb\"}]}, {name: g, rules: []}]\njobs:\n  - {name: a, command: \"x\\ny\", parameters: {i: \"1:3\"}}\n  - {name: b, command: y, depends_on: [a]}\n"},
		{FormatFaber, `{"id": "p", "workflow": {"phases": {"build": {"pre_steps": [{"id": "pre", "prompt": "b"}], "steps": [{"id": "a", "prompt": "x\ny {issue.title}"}]}, "release": {"steps": [{"id": "pr", "skill": "repo:pr"}]}}}, "items": [{"work_id": "1", "issue": {"title": "A"}}, {"work_id": "2", "issue": {"title": "B"}}]}`},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.in), &doc); err != nil {
			t.Fatal(err)
		}
		plan, _, err := ConvertNode(tc.f, "w.yaml", &doc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var whole bytes.Buffer
		enc := yaml.NewEncoder(&whole)
		enc.SetIndent(2)
		if err := enc.Encode(plan); err != nil {
			t.Fatal(err)
		}
		_ = enc.Close()
		var parts bytes.Buffer
		if err := encodePlan(&parts, plan); err != nil {
			t.Fatal(err)
		}
		if whole.String() != parts.String() {
			t.Errorf("texts differ:\n--- one Encode\n%s\n--- encodePlan\n%s", whole.String(), parts.String())
		}
	}
}
