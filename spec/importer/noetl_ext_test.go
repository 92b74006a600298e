package importer_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/importer"
)

// TestNoetlExampleValidates: testdata/noetl/deploy.yaml, a playbook with a
// case, router arcs and a sub-playbook, is detected and validates as a
// faber plan, its sub-playbook with it.
func TestNoetlExampleValidates(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "noetl", "deploy.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f := importer.Detect(data); f != importer.FormatNoetl {
		t.Fatalf("Detect = %v, want noetl", f)
	}
	p, err := spec.Load(path, spec.Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if p.Name != "noetl_deploy" {
		t.Errorf("plan name %q", p.Name)
	}
}

// TestNoetlValidationPointsIntoThePlaybook: what faber's validation finds
// in a converted playbook (a cycle, a context key no workload has) is at
// its place in the playbook.
func TestNoetlValidationPointsIntoThePlaybook(t *testing.T) {
	tests := []struct{ in, want string }{
		{`kind: Playbook
metadata: {name: x}
workflow:
  - step: start
    tool: {kind: shell, cmds: echo}
    next: [{step: a}]
  - step: a
    tool: {kind: shell, cmds: echo}
    next: [{step: start}]
`, "p.yaml:4:11: step \"start\": cycle: start -> a -> start"},
		{`kind: Playbook
metadata: {name: x}
workflow:
  - step: start
    tool: {kind: shell, cmds: "echo {{ workload.nope }}"}
`, "p.yaml:5:31: "},
	}
	for _, tt := range tests {
		file := filepath.Join(t.TempDir(), "p.yaml")
		_, err := spec.Parse(file, []byte(tt.in), spec.Options{})
		var inv *spec.Invalid
		if !errors.As(err, &inv) {
			t.Errorf("err = %v, want *spec.Invalid\n%s", err, tt.in)
			continue
		}
		if msg := inv.Errors[0].Error(); !strings.Contains(msg, tt.want) {
			t.Errorf("error %q, want it at %q", msg, tt.want)
		}
	}
}
