package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// fuzzConvert converts data as format f: a failure has at least one
// diagnostic, each one line and none a recovered panic; a success is YAML
// that parses back into a mapping.
func fuzzConvert(t *testing.T, f Format, file string, data []byte) {
	out, warns, err := Convert(f, file, data, Options{})
	for _, w := range warns {
		if strings.Contains(w, "\n") {
			t.Fatalf("multi-line warning %q", w)
		}
	}
	if err != nil {
		e, ok := err.(*Errors)
		if !ok || len(e.Diags) == 0 {
			t.Fatalf("error %T %v without diagnostics", err, err)
		}
		for _, d := range e.Diags {
			if strings.Contains(d.Message, "internal error") {
				t.Fatalf("recovered panic: %s", d.Message)
			}
		}
		return
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("the converted plan is not YAML: %v\n%s", err, out)
	}
	if rootMap(&doc) == nil {
		t.Fatalf("the converted plan is not a mapping:\n%s", out)
	}
}

// seeds adds the repository's example files whose names start with prefix.
func seeds(f *testing.F, prefix string) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "examples", prefix+"*"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
}

// FuzzTorc converts arbitrary bytes as a Torc workflow, read as YAML and
// as JSON (faber import torc takes both; the file name does not change the
// parse, but messages name it).
func FuzzTorc(f *testing.F) {
	seeds(f, "torc-")
	for _, s := range []string{
		"name: x\njobs:\n  - {name: a, command: echo}\n",
		`{"name": "x", "jobs": [{"name": "a", "command": "echo"}, {"name": "b", "command": "x", "depends_on": ["a"]}]}`,
		"name: s\nparameters: {i: \"1:3\"}\njobs:\n  - {name: 't_{i:03d}', command: 'run {i}', use_parameters: [i], parameter_mode: zip}\n  - {name: g, command: x, depends_on: ['t_{i:03d}'], depends_on_regexes: ['^t_', '(']}\n",
		"name: f\nfiles: [{name: 'f{i}', path: 'p/{i}', parameters: {i: '[a,b]'}}]\njobs:\n  - {name: w, command: 'x ${files.output.f{i}}', parameters: {i: '[a,b]'}}\n  - {name: r, command: 'y ${files.input.fa}', input_files: [fb]}\n",
		"name: n\nresource_requirements: [{name: rr, runtime: PT1H, num_nodes: 2}]\nslurm_schedulers: [{name: s, walltime: '1:00:00', extra: '-x'}]\njobs:\n  - {name: a, command: x, resource_requirements: rr, scheduler: s}\n",
		"name: n\nfailure_handlers: [{name: h, rules: [{exit_codes: [1], recovery_script: 'echo {x}'}]}]\njobs:\n  - {name: a, command: x, failure_handler: h}\n",
		"name: n\njobs:\n  - &j {name: a, command: x}\n  - *j\n",
		"name: n\nparameters: {i: '0.0:1.0:0.25'}\njobs: [{name: 'a{i:.2f}', command: x, use_parameters: [i]}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzConvert(t, FormatTorc, "workflow.yaml", data)
		fuzzConvert(t, FormatTorc, "workflow.json", data)
	})
}

// FuzzFaber converts arbitrary bytes as a FABER plan.json.
func FuzzFaber(f *testing.F) {
	seeds(f, "faber-")
	for _, s := range []string{
		`{"id": "p", "workflow": {"phases": {"build": {"steps": [{"id": "a", "prompt": "do {issue.title}"}]}}}, "items": [{"work_id": "1", "issue": {"title": "A"}}]}`,
		`{"id": "p", "workflow": {"phases": {"release": {"steps": [{"id": "pr", "skill": "repo:pr", "config": {"draft": true}}]}}}, "execution": {"max_concurrent": 2}}`,
		`{"id": "p", "workflow": {"phases": [{"name": "x"}]}}`,
		`{"workflow": {"phases": {"build": {"pre_steps": [{"id": "a", "prompt": "{{x}} {work_id}"}]}}}, "additional_instructions": "b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzConvert(t, FormatFaber, "plan.json", data)
	})
}

// FuzzNoetl converts arbitrary bytes as a NoETL playbook (YAML, or JSON,
// which is YAML too).
func FuzzNoetl(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "noetl", "*.yaml"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"kind: Playbook\nmetadata: {name: x}\nworkload: {a: '1', b: ~}\nworkflow:\n  - step: start\n    case:\n      - {when: '{{ workload.a }} == 1', then: [{step: b}], else: [{step: end}]}\n    next: [{step: b, when: '{{ workload.b }}'}]\n  - {step: b, tool: {kind: shell, cmds: ['echo {{ workload.a }} ${x}', 'x # y']}}\n  - {step: end}\n",
		"kind: Playbook\nmetadata: {name: x}\nworkflow:\n  - step: start\n    next: {spec: {mode: inclusive}, arcs: [{step: a, when: \"{{ workload.a == 'x' }}\"}, {step: a}]}\n  - {step: a, tool: {kind: playbook, path: c.yaml, args: {k: '{{ k }}'}}, next: [{step: start}]}\n",
		`{"apiVersion": "noetl.io/v2", "kind": "Playbook", "metadata": {"name": "j"}, "workflow": [{"step": "start", "tool": {"kind": "http"}}, {"step": "Start"}]}`,
		"kind: Playbook\nmetadata: {name: x}\nexecutor: {spec: {entry_step: b}}\nworkflow:\n  - &s {step: a, next: [{step: b}]}\n  - {step: b, when: '{{ x | y }}', next: [*s]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzConvert(t, FormatNoetl, "playbook.yaml", data)
	})
}
