package importer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name, in string
		want     Format
	}{
		{"torc yaml", "name: x\njobs:\n  - {name: a, command: echo}\n", FormatTorc},
		{"torc json", `{"name": "x", "jobs": [{"name": "a", "command": "echo"}]}`, FormatTorc},
		{"faber plan.json", `{"id": "p", "workflow": {"phases": {"build": {"steps": []}}}}`, FormatFaber},
		{"faber plan: steps", "name: x\nsteps:\n  - {id: a, run: echo}\n", FormatNone},
		{"faber plan: phases and jobs", "name: x\njobs: 2\nphases: []\n", FormatNone},
		{"faber plan wins over torc-looking jobs", "name: x\nsteps: []\njobs:\n  - {name: a, command: echo}\n", FormatNone},
		{"jobs without command", "name: x\njobs:\n  - {name: a}\n", FormatNone},
		{"jobs not a list", "name: x\njobs: 4\n", FormatNone},
		{"both torc and faber", `{"jobs": [{"command": "x"}], "workflow": {"phases": {}}}`, FormatNone},
		{"not yaml", "{{{", FormatNone},
		{"a list", "- a\n", FormatNone},
		{"empty", "", FormatNone},
	}
	for _, tt := range tests {
		if got := Detect([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: Detect = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func convert(t *testing.T, f Format, in string) (string, []string, error) {
	t.Helper()
	out, warns, err := Convert(f, "w.yaml", []byte(in), Options{})
	return string(out), warns, err
}

func mustConvert(t *testing.T, f Format, in string) (string, []string) {
	t.Helper()
	out, warns, err := convert(t, f, in)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	return out, warns
}

func TestTorcMapping(t *testing.T) {
	in := `name: demo
description: d
use_pending_failed: true
files:
  - {name: raw, path: "data/raw {x}.csv"}
resource_requirements:
  - {name: rr, num_cpus: 2, memory: 2g, num_gpus: 1, runtime: P1DT2H30M}
slurm_schedulers:
  - {name: gpu, account: proj, partition: gpu, walltime: "04:00:00", gres: "gpu:1", nodes: 2, extra: "--exclusive"}
slurm_defaults: {qos: high, constraint: cpu}
failure_handlers:
  - name: h
    rules:
      - {exit_codes: [1], max_retries: 2, recovery_script: "echo $TORC_RETURN_CODE"}
jobs:
  - name: Fetch Data!
    command: curl -o ${files.output.raw} http://x && echo $TORC_WORKFLOW_ID $TORC_ATTEMPT_ID
  - name: train
    command: train ${files.input.raw} ${HOME}
    resource_requirements: rr
    scheduler: gpu
    failure_handler: h
  - name: other
    command: "true"
    depends_on_regexes: ["^tr"]
`
	out, warns := mustConvert(t, FormatTorc, in)
	for _, want := range []string{
		"name: demo\n", "use_pending_failed: true\n",
		"  - id: fetch-data\n    name: Fetch Data!\n",
		"env:\n  TORC_WORKFLOW_ID: '{run_id}'\n  TORC_JOB_ID: '{step_id}'\n  TORC_JOB_NAME: '{step_name}'\n  TORC_ATTEMPT_ID: '{attempt}'\n",
		"    run: |-\n      export TORC_OUTPUT_DIR=\"$FABER_OUTPUT_DIR\"\n      curl -o data/raw {{x}}.csv http://x",
		"    needs: []\n",
		"      export TORC_OUTPUT_DIR=\"$FABER_OUTPUT_DIR\"\n      train data/raw {{x}}.csv ${{HOME}}",
		"    needs: [fetch-data]\n",
		"    timeout: 26h30m0s\n",
		"    executor: slurm\n",
		"      cpus: 2\n", "      mem: 2G\n", "      gpus: \"1\"\n", "      account: proj\n", "      partition: gpu\n",
		"      time: 04:00:00\n", "      qos: high\n",
		"extra_args: ['--gres=gpu:1', --nodes=2, --exclusive, --constraint=cpu]",
		"    failure_handler: h\n",
		"recovery_script: |-\n          export TORC_OUTPUT_DIR=\"$FABER_OUTPUT_DIR\" TORC_RETURN_CODE=\"$FABER_RETURN_CODE\"\n          echo $TORC_RETURN_CODE\n",
		"  - id: other\n", "    needs: [train]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
}

func TestTorcPathsQuoted(t *testing.T) {
	// paths are written as they are: a path with a space stays one word
	// only if the Torc command quoted it; the converter does not add quotes.
	out, _ := mustConvert(t, FormatTorc, "name: n\nfiles: [{name: f, path: a.txt}]\njobs:\n  - {name: a, command: 'cat ${files.input.f}'}\n")
	if !strings.Contains(out, "      cat a.txt\n") {
		t.Errorf("got:\n%s", out)
	}
}

func TestTorcFanOut(t *testing.T) {
	in := `name: sweep
jobs:
  - name: task_{i:03d}
    command: ./run.sh --index {i} --lr {lr}
    parameters:
      i: "1:5:2"
      lr: [0.1, 0.2]
  - name: zipped_{a}
    command: echo {a} {b}
    parameter_mode: zip
    parameters: {a: "[x,y]", b: "1:2"}
  - name: after
    command: echo done
    depends_on: [task_003, zipped_y]
`
	out, _ := mustConvert(t, FormatTorc, in)
	want := `steps:
  - id: task
    name: task_{i:03d}
    run: |-
      export TORC_OUTPUT_DIR="$FABER_OUTPUT_DIR"
      ./run.sh --index {item.i} --lr {item.lr}
    needs: []
    matrix:
      i: [1, 3, 5]
      lr: [0.1, 0.2]
    env:
      TORC_JOB_NAME: task_{item.i}
  - id: zipped
    name: zipped_{a}
    run: |-
      export TORC_OUTPUT_DIR="$FABER_OUTPUT_DIR"
      echo {item.a} {item.b}
    needs: []
    foreach:
      - {a: x, b: 1}
      - {a: y, b: 2}
    env:
      TORC_JOB_NAME: zipped_{item.a}
  - id: after
    name: after
    run: |-
      export TORC_OUTPUT_DIR="$FABER_OUTPUT_DIR"
      echo done
    needs: [task, zipped]
`
	if !strings.HasSuffix(out, want) {
		t.Errorf("got:\n%s\nwant suffix:\n%s", out, want)
	}
}

func TestExpandParam(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  bool
	}{
		{"1:5", "1 2 3 4 5", false},
		{"0:10:5", "0 5 10", false},
		{"[a, b,c]", "a b c", false},
		{"0.0:1.0:0.25", "0.00 0.25 0.50 0.75 1.00", false},
		{"solo", "solo", false},
		{"5:1", "", true},
		{"1:5:0", "", true},
		{"0.0:1.0", "", true},
		{"1:1000000000", "", true},
	}
	for _, tt := range tests {
		got, err := expandParam(tt.in)
		if (err != nil) != tt.err || strings.Join(got, " ") != tt.want {
			t.Errorf("expandParam(%q) = %q, %v; want %q, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestISODuration(t *testing.T) {
	tests := map[string]time.Duration{"PT30M": 30 * time.Minute, "PT2H": 2 * time.Hour, "P1D": 24 * time.Hour, "PT1.5S": 1500 * time.Millisecond}
	for in, want := range tests {
		if got, err := isoDuration(in); err != nil || got != want {
			t.Errorf("isoDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"30m", "P", "PT", "PT0S", "1h"} {
		if _, err := isoDuration(bad); err == nil {
			t.Errorf("isoDuration(%q): no error", bad)
		}
	}
}

func TestSanitizeID(t *testing.T) {
	for in, want := range map[string]string{"Fetch Data!": "fetch-data", "a__b": "a__b", "  x  ": "x", "--Q.1": "q.1", "日本": "", "task_": "task"} {
		if got := sanitizeID(in); got != want {
			t.Errorf("sanitizeID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTorcErrors: every field with no equivalent, and every bad
// reference, is an error naming it at its line and column.
func TestTorcErrors(t *testing.T) {
	head := "name: n\njobs:\n"
	tests := []struct{ in, want string }{
		{head + "  - {name: a, command: x, priority: 1}\n", `w.yaml:3:27: job "a": unknown Torc job field "priority": no faber equivalent`},
		{"name: n\nfoo: 1\njobs:\n  - {name: a, command: x}\n", `w.yaml:2:1: unknown Torc workflow field "foo"`},
		{head + "  - {name: A, command: x}\n  - {name: a, command: y}\n", `w.yaml:4:12: job "a": its step id "a" is also the id of job "A" (line 3)`},
		{head + "  - {name: a, command: x, depends_on: [zz]}\n", `w.yaml:3:40: job "a": depends_on: no job named "zz"`},
		{head + "  - {name: a, command: x, depends_on_regexes: [\"^q\"]}\n", `job "a": depends_on_regexes: "^q" matches no other job`},
		{head + "  - {name: a, command: x, resource_requirements: big}\n", `job "a": resource_requirements: no resource_requirements named "big"`},
		{head + "  - {name: a, command: x, scheduler: s}\n", `job "a": scheduler: no slurm_schedulers entry named "s"`},
		{head + "  - {name: a, command: 'cat ${files.input.nope}'}\n", `no file named "nope" in files:`},
		{head + "  - {name: a, command: 'x ${user_data.input.u}'}\n", `w.yaml:3:24: job "a": command: ${user_data.input.u}: no user_data entry named "u"`},
		{head + "  - {name: a, command: x, invocation_script: y}\n", `job "a": invocation_script: not supported`},
		{head + "  - {name: 'a{i}', command: 'x {i:03d}', parameters: {i: '1:2'}}\n", `format specs are not supported in commands`},
		{head + "  - {name: a, command: x, parameters: {i: '9:1'}}\n", `w.yaml:3:43: job "a": parameters: i: range "9:1"`},
		{head + "  - {name: a, command: x, parameters: {i: '1:2', j: '1:3'}, parameter_mode: zip}\n", `parameter_mode zip: parameter "i" has 2 values, "j" has 3`},
		{"name: n\nactions: [{trigger_type: on_workflow_start}]\njobs:\n  - {name: a, command: x}\n", `w.yaml:2:1: actions: not supported`},
		{"name: n\nfailure_handlers: [{name: h, rules: [{exit_codes: [1], delay: 2}]}]\njobs:\n  - {name: a, command: x}\n", `failure_handlers: rules: unknown Torc field "delay"`},
		{"name: n\nresource_requirements: [{name: r, num_nodes: 2}]\njobs:\n  - {name: a, command: x, resource_requirements: r}\n", `num_nodes: 2 nodes need a Slurm scheduler`},
		{"description: no name\njobs:\n  - {name: a, command: x}\n", `w.yaml:1:1: missing required field "name"`},
	}
	for _, tt := range tests {
		wantConvertError(t, FormatTorc, tt.in, tt.want)
	}
}

// wantConvertError checks that converting in (a file of format f) fails
// with an *Errors one of whose diagnostics, as file:line:col: message,
// holds want.
func wantConvertError(t *testing.T, f Format, in, want string) {
	t.Helper()
	_, _, err := convert(t, f, in)
	var ie *Errors
	if !errors.As(err, &ie) {
		t.Errorf("%q: err = %v, want an *Errors", in, err)
		return
	}
	var all []string
	for _, d := range ie.Diags {
		all = append(all, format(ie.File, d))
	}
	if !strings.Contains(strings.Join(all, "\n"), want) {
		t.Errorf("%q:\ngot  %q\nwant %q", in, all, want)
	}
}

func TestTorcWarnings(t *testing.T) {
	in := `name: n
user: me
resource_monitor: {cpu: true}
compute_node_wait_for_new_jobs_seconds: 60
jobs_sort_method: gpus_runtime_memory
resource_requirements: [{name: r, num_cpus: 4, memory: 1g, runtime: PT1H}]
jobs:
  - {name: a, command: x, resource_requirements: r, supports_termination: true, cancel_on_blocking_job_failure: false}
`
	_, warns := mustConvert(t, FormatTorc, in)
	got := strings.Join(warns, "\n")
	for _, want := range []string{
		"w.yaml:2:1: user: dropped", "w.yaml:3:1: resource_monitor: dropped",
		"w.yaml:4:1: compute_node_wait_for_new_jobs_seconds: dropped", "w.yaml:5:1: jobs_sort_method: dropped",
		"supports_termination: dropped", "cancel_on_blocking_job_failure: false dropped",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "num_cpus") || strings.Contains(got, "memory:") {
		t.Errorf("a local job's requests are kept, not dropped:\n%s", got)
	}
}

// TestTorcLocalRequests: a local job's resource_requirements are its
// requests (cpus, memory, gpus; runtime its timeout), as Torc's runner
// claims the jobs that fit; a 0 is no request.
func TestTorcLocalRequests(t *testing.T) {
	in := `name: n
resource_requirements:
  - {name: big, num_cpus: 4, memory: 6g, num_gpus: 1, runtime: PT1H}
  - {name: none, num_cpus: 0, num_gpus: 0, memory: 512m}
jobs:
  - {name: a, command: x, resource_requirements: big}
  - {name: b, command: y, resource_requirements: none}
`
	out, warns := mustConvert(t, FormatTorc, in)
	for _, want := range []string{
		"    needs: []\n    cpus: 4\n    memory: 6g\n    gpus: 1\n    timeout: 1h0m0s\n",
		"  - id: b\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "cpus:") != 1 || strings.Count(out, "gpus:") != 1 || strings.Count(out, "memory:") != 2 {
		t.Errorf("a 0 is no request:\n%s", out)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
}

func TestFaberMapping(t *testing.T) {
	in := `{
  "id": "p1",
  "workflow": {"id": "wf", "description": "d", "phases": {
    "release": {"steps": [{"id": "pr", "skill": "repo:pr", "config": {"draft": true, "base": "main", "skip": false}}]},
    "build": {"post_steps": [{"id": "post", "prompt": "after"}], "steps": [{"id": "impl", "prompt": "do {issue.title} for {work_id} ({step_id}, {x-y}, {{json}}, ${HOME})"}], "pre_steps": [{"id": "pre", "prompt": "before"}]}
  }},
  "additional_instructions": "be brief",
  "items": [{"work_id": "1", "issue": {"title": "A"}}, {"work_id": "2", "issue": {"title": "B"}}],
  "execution": {"max_concurrent": 3}
}`
	out, _, err := Convert(FormatFaber, "plan.json", []byte(in), Options{Agent: []string{"my-agent", "--print"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `name: p1
description: d
agent: [my-agent, --print]
commands:
  /prompt: my-agent --print
phases:
  - name: build
    steps:
      - id: build-pre
        run: |-
          /prompt 'before

          be brief' --work-id {item.work_id}
        foreach:
          - {work_id: "1", issue_title: A}
          - {work_id: "2", issue_title: B}
        max_parallel: 3
`
	if !strings.Contains(string(out), want) {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	for _, w := range []string{"id: build-impl", "/prompt 'do {item.issue_title} for {item.work_id} ({step_id}, {{x-y}}, {{json}}, ${{HOME}})", "id: build-post", "- name: release", "run: /repo:pr --draft --base main 'be brief' --work-id {item.work_id}"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if i, j := strings.Index(string(out), "build-pre"), strings.Index(string(out), "build-post"); i > j {
		t.Errorf("pre_steps after post_steps:\n%s", out)
	}
}

func TestFaberErrors(t *testing.T) {
	wrap := func(step string) string {
		return "{\"id\": \"p\", \"workflow\": {\"phases\": {\"build\": {\"steps\": [" + step + "]}}}}"
	}
	tests := []struct{ in, want string }{
		{wrap(`{"id": "a", "prompt": "p", "conditional": "x"}`), `plan.json:1:84: phase build: step "a": conditional: not supported`},
		{wrap(`{"id": "a"}`), `step "a": has neither prompt nor skill`},
		{wrap(`{"prompt": "p"}`), `phase build: a step has no id`},
		{wrap(`{"id": "a", "skill": "s", "config": {"x": {"y": 1}}}`), `config: x: must be a string, number or boolean`},
		{`{"id": "p", "workflow": {"phases": {"deploy": {"steps": []}}}}`, `unknown phase "deploy"`},
		{`{"id": "p", "workflow": {"extends": "x", "phases": {}}}`, `workflow: extends: not supported`},
		{`{"id": "p", "workflow": {"hooks": {"pre_build": [{"name": "h"}]}, "phases": {"build": {"steps": [{"id": "a", "prompt": "p"}]}}}}`, `workflow: hooks: pre_build: not supported`},
		{`{"id": "p", "bogus": 1, "workflow": {"phases": {}}}`, `plan.json:1:13: unknown FABER plan field "bogus"`},
		{`{"id": "p", "items": [{"x": 1}], "workflow": {"phases": {"build": {"steps": [{"id": "a", "prompt": "p"}]}}}}`, `every item needs a work_id`},
		{`{"id": "p", "step_to_run": "build:zz", "workflow": {"phases": {"build": {"steps": [{"id": "a", "prompt": "p"}]}}}}`, `step_to_run: no step "build:zz"`},
	}
	for _, tt := range tests {
		_, _, err := Convert(FormatFaber, "plan.json", []byte(tt.in), Options{})
		if err == nil || !strings.Contains(allErrors(err), tt.want) {
			t.Errorf("%s:\ngot  %v\nwant %q", tt.in, allErrors(err), tt.want)
		}
	}
}

func allErrors(err error) string {
	var ie *Errors
	if !errors.As(err, &ie) {
		return "<no *Errors>"
	}
	var s []string
	for _, d := range ie.Diags {
		s = append(s, format(ie.File, d))
	}
	return strings.Join(s, "\n")
}

func TestFaberFilters(t *testing.T) {
	in := `{"id": "p", "phases_to_run": ["build"], "step_to_run": "build:b",
	  "workflow": {"phases": {"frame": {"steps": [{"id": "f", "prompt": "x"}]},
	    "build": {"steps": [{"id": "a", "prompt": "x"}, {"id": "b", "skill": "s"}]}}}}`
	out, _, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "frame") || strings.Contains(s, "build-a") || !strings.Contains(s, "id: build-b") || strings.Contains(s, "/prompt") {
		t.Errorf("got:\n%s", s)
	}
	if !strings.Contains(s, "agent: [claude, -p]") {
		t.Errorf("default agent missing:\n%s", s)
	}
}

func TestConvertNodeKeepsPositions(t *testing.T) {
	in := "name: n\njobs:\n  - name: a\n    command: echo hi\n"
	f := Detect([]byte(in))
	out, _, err := Convert(f, "w.yaml", []byte(in), Options{})
	if err != nil || !strings.Contains(string(out), "\n      echo hi\n") {
		t.Fatalf("%s %v", out, err)
	}
}

func TestAliasBombIsAnError(t *testing.T) {
	in := "name: n\na: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n" +
		"failure_handlers: [{name: h, rules: [{exit_codes: [*e, *e]}]}]\njobs:\n  - {name: a, command: x}\n"
	_, _, err := convert(t, FormatTorc, in)
	if err == nil || !strings.Contains(allErrors(err), "expands too many YAML aliases") {
		t.Errorf("err = %v", allErrors(err))
	}
}

func TestFaberOneItemIsContext(t *testing.T) {
	in := `{"id": "p", "agent": "echo",
  "items": [{"work_id": "7", "Due-Date": "mon", "phase": "x", "issue": {"title": "T", "labels": ["a"]}}],
  "additional_instructions": "for {work_id}",
  "workflow": {"phases": {"build": {"steps": [
    {"id": "a", "prompt": "fix {issue.title} ({item.work_id}, {due_date}, {phase})"},
    {"id": "b", "skill": "s", "config": {"title": "{issue.title}", "n": 3}}]}}}}`
	out, warns, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
	if err != nil {
		t.Fatal(allErrors(err))
	}
	s := string(out)
	for _, want := range []string{
		"context:\n  work_id: \"7\"\n  due_date: mon\n  issue_title: T\nagent:",
		"/prompt 'fix {issue_title} ({work_id}, {due_date}, {phase})\n\n          for {work_id}' --work-id {work_id}",
		"run: /s --title '{issue_title}' --n 3 'for {work_id}' --work-id {work_id}",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "foreach") || strings.Contains(s, "phase: x") {
		t.Errorf("one item fans out, or the built-in field stayed:\n%s", s)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], `field "phase" left out`) {
		t.Errorf("warnings: %v", warns)
	}
}

func TestFaberItemsEveryField(t *testing.T) {
	in := `{"id": "p", "items": [{"work_id": "1", "a": "x"}, {"work_id": "2", "b": "y"}],
  "workflow": {"phases": {"build": {"steps": [{"id": "s", "prompt": "{a}{b}"}]}}}}`
	out, _, err := Convert(FormatFaber, "plan.json", []byte(in), Options{})
	if err != nil {
		t.Fatal(allErrors(err))
	}
	for _, want := range []string{`- {work_id: "1", a: x, b: ""}`, `- {work_id: "2", a: "", b: y}`, "/prompt '{item.a}{item.b}' --work-id {item.work_id}"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFaberPlaceholderErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"id": "p", "items": [{"work_id": "1", "due-date": "x", "due_date": "y"}], "workflow": {"phases": {"build": {"steps": [{"id": "s", "prompt": "p"}]}}}}`,
			`plan.json:1:69: items[0]: fields "due-date" and "due_date" both become the variable {due_date}`},
		{`{"id": "p", "items": [{"work_id": "1"}], "workflow": {"phases": {"build": {"steps": [{"id": "s", "prompt": "{issue.title}"}]}}}}`,
			`phase build: step "s": prompt: {issue.title} names no field of items (the items' fields are work_id)`},
		{`{"id": "p", "workflow": {"phases": {"build": {"steps": [{"id": "s", "skill": "k", "config": {"x": "{a.b}"}}]}}}}`,
			`config: x: {a.b} names no field of items (the plan has no items)`},
	}
	for _, tt := range tests {
		_, _, err := Convert(FormatFaber, "plan.json", []byte(tt.in), Options{})
		if err == nil || !strings.Contains(allErrors(err), tt.want) {
			t.Errorf("%s:\ngot  %v\nwant %q", tt.in, allErrors(err), tt.want)
		}
	}
}

func TestVarName(t *testing.T) {
	for in, want := range map[string]string{"work_id": "work_id", "Due-Date": "due_date", "a.b": "a_b", "2fa": "_2fa", "--": "", "x__y": "x__y", "_p_": "p", "日本x": "x"} {
		if got := varName(in); got != want {
			t.Errorf("varName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTorcEnvEverywhere(t *testing.T) {
	// Every step and recovery script gets the TORC_* environment, whether
	// or not its text names the variables (a script file may read them).
	in := "name: n\nfailure_handlers: [{name: h, rules: [{exit_codes: [1], recovery_script: ./fix.sh}]}]\njobs:\n  - {name: a, command: ./run.sh, failure_handler: h}\n"
	out, _ := mustConvert(t, FormatTorc, in)
	for _, want := range []string{
		"env:\n  TORC_WORKFLOW_ID: '{run_id}'\n  TORC_JOB_ID: '{step_id}'\n  TORC_JOB_NAME: '{step_name}'\n  TORC_ATTEMPT_ID: '{attempt}'\n",
		"recovery_script: |-\n          export TORC_OUTPUT_DIR=\"$FABER_OUTPUT_DIR\" TORC_RETURN_CODE=\"$FABER_RETURN_CODE\"\n          ./fix.sh\n",
		"run: |-\n      export TORC_OUTPUT_DIR=\"$FABER_OUTPUT_DIR\"\n      ./run.sh\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
