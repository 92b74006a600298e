package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parse parses src as plan.yaml in a fresh directory.
func parse(t testing.TB, src string, opts Options) (*Plan, *Invalid) {
	t.Helper()
	return parseAt(t, filepath.Join(t.TempDir(), "plan.yaml"), src, opts)
}

func parseAt(t testing.TB, file, src string, opts Options) (*Plan, *Invalid) {
	t.Helper()
	p, err := Parse(file, []byte(src), opts)
	if err != nil {
		var inv *Invalid
		if !errors.As(err, &inv) {
			t.Fatalf("Parse error is %T, want *Invalid: %v", err, err)
		}
		return nil, inv
	}
	return p, nil
}

func mustParse(t testing.TB, src string, opts Options) *Plan {
	t.Helper()
	p, inv := parse(t, src, opts)
	if inv != nil {
		t.Fatalf("unexpected errors:\n%s", diagText(inv.Errors))
	}
	return p
}

func diagText(ds []Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		d.File = filepath.Base(d.File)
		b.WriteString(d.Error() + "\n")
	}
	return b.String()
}

const kitchenSink = `
name: dataset-create
description: Create the IPEDS HD dataset
context:
  work_id: "137"
  dataset: ipeds
  version: 2026
  ratio: 1.5
jobs: 4
shell: bash
env: {LC_ALL: C, PORT: 8080}
use_pending_failed: true
stop_mode: cancel
agent: [claude, -p]
commands:
  /faber:debug: ./scripts/debug.sh --verbose
handler_timeout: 5m
kill_grace: 3s
executor: local
resources: {cpus: 8, memory: 32G, gpus: 2}
pools: {db: 2}
slurm:
  partition: gpu
  account: lab
  qos: high
  cpus: 4
  mem: 16G
  gpus: a100:2
  time: "1:00:00"
  extra_args: --exclusive --nice=10
failure_handlers:
  - name: transient
    rules:
      - exit_codes: [10, 11]
        stderr_matches: 'timeout|reset'
        recovery_script: ./scripts/cleanup.sh {error} {exit_code}
        max_retries: 2
        delay: 2s
        backoff: exponential
        max_delay: 1m
      - match_all_exit_codes: true
        max_retries: 0
phases:
  - name: build
    steps:
      - id: fetch
        run: ./fetch.sh {dataset}
      - id: build-engineer-validate
        name: Validate Engineer Work
        description: Validate engineer's work before deployment
        run: ./validate.sh --work-id {work_id}
        timeout: 10m
        needs: [fetch]
        env: {MODE: strict, WHO: "{step_id}"}
        dir: sub/{dataset}
        shell: zsh
        failure_handler: transient
        handler_timeout: 1m
        kill_grace: 1s
        executor: slurm
        slurm: {cpus: 8, extra_args: [--exclusive]}
        result_handling:
          on_failure: /faber:debug --run-id {run_id} --problem "{error}" --auto-fix
          max_retries: 2
  - name: publish
    parallel: true
    steps:
      - id: upload
        prompt: /faber:debug upload {version}
        result_handling:
          on_failure:
            command: /faber:debug
            args: {auto-fix: true, dry-run: false, problem: "{error}", level: 3}
            retry_on_success: false
            max_retries: 3
            handler_timeout: 20s
      - id: child
        plan: child.yaml
        context: {table: "{dataset}-hd"}
      - id: notify
        run: echo done
        gpus: 1
        pool: db
        result_handling: {on_failure: continue}
end:
  name: Notify
  run: ./notify.sh {run_id}
  timeout: 1m
`

func writeFile(t testing.TB, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func TestParseAllFields(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "child.yaml"), "name: child\ncontext: {table: x}\nsteps: [{id: a, run: 'echo {table}'}]\n", 0o644)
	writeFile(t, filepath.Join(dir, "scripts/debug.sh"), "#!/bin/sh\n", 0o755)
	p, inv := parseAt(t, filepath.Join(dir, "plan.yaml"), kitchenSink, Options{})
	if inv != nil {
		t.Fatalf("errors:\n%s", diagText(inv.Errors))
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %s", diagText(p.Warnings))
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	check("Name", p.Name, "dataset-create")
	check("Description", p.Description, "Create the IPEDS HD dataset")
	check("Dir", p.Dir, dir)
	check("Context", p.Context, map[string]string{"work_id": "137", "dataset": "ipeds", "version": "2026", "ratio": "1.5"})
	check("ContextKeys", p.ContextKeys, []string{"work_id", "dataset", "version", "ratio"})
	check("Jobs", p.Jobs, 4)
	check("Shell", p.Shell, "bash")
	check("Env", p.Env, map[string]string{"LC_ALL": "C", "PORT": "8080"})
	check("EnvKeys", p.EnvKeys, []string{"LC_ALL", "PORT"})
	check("UsePendingFailed", p.UsePendingFailed, true)
	check("StopMode", p.StopMode, StopCancel)
	check("Agent", p.Agent, []string{"claude", "-p"})
	check("Commands", p.Commands, map[string]string{"/faber:debug": "./scripts/debug.sh --verbose"})
	check("HandlerTimeout", p.HandlerTimeout, 5*time.Minute)
	check("KillGrace", p.KillGrace, 3*time.Second)
	check("Executor", p.Executor, "local")
	check("Resources", p.Resources, Capacity{CPUs: 8, Memory: 32 << 30, GPUs: 2})
	check("Pools", p.Pools, map[string]int{"db": 2})
	check("notify GPUs", p.Step("notify").GPUs, 1)
	check("notify Pools", p.Step("notify").Pools, []string{"db"})
	check("Slurm", p.Slurm, &Slurm{Partition: "gpu", Account: "lab", QOS: "high", CPUs: 4, Mem: "16G", GPUs: "a100:2", Time: "1:00:00", ExtraArgs: []string{"--exclusive", "--nice=10"}})

	h := p.FailureHandlers["transient"]
	if h == nil || len(h.Rules) != 2 {
		t.Fatalf("handler = %+v", h)
	}
	r0, r1 := h.Rules[0], h.Rules[1]
	check("rule0.ExitCodes", r0.ExitCodes, []int{10, 11})
	check("rule0.StderrMatches", r0.StderrMatches.String(), "timeout|reset")
	check("rule0.RecoveryScript", r0.RecoveryScript, "./scripts/cleanup.sh {error} {exit_code}")
	check("rule0.MaxRetries", r0.MaxRetries, 2)
	check("rule0.Delay", r0.Delay, 2*time.Second)
	check("rule0.Backoff", r0.Backoff, BackoffExponential)
	check("rule0.MaxDelay", r0.MaxDelay, time.Minute)
	check("rule0.Index", r0.Index, 0)
	check("rule1.MatchAll", r1.MatchAll, true)
	check("rule1.MaxRetries", r1.MaxRetries, 0)
	check("rule1.Backoff", r1.Backoff, BackoffFixed)
	check("rule1.Index", r1.Index, 1)

	check("phases", len(p.Phases), 2)
	check("steps", stepIDs(p.Steps), []string{"fetch", "build-engineer-validate", "upload", "child", "notify"})
	v := p.Step("build-engineer-validate")
	check("v.Name", v.Name, "Validate Engineer Work")
	check("v.Description", v.Description, "Validate engineer's work before deployment")
	check("v.Phase", v.Phase, "build")
	check("v.Index", v.Index, 1)
	check("v.Timeout", v.Timeout, 10*time.Minute)
	check("v.Needs", v.Needs, []string{"fetch"})
	check("v.NeedsSet", v.NeedsSet, true)
	check("v.Env", v.Env, map[string]string{"MODE": "strict", "WHO": "{step_id}"})
	check("v.EnvKeys", v.EnvKeys, []string{"MODE", "WHO"})
	check("v.Dir", v.Dir, "sub/{dataset}")
	check("v.Shell", v.Shell, "zsh")
	check("v.FailureHandler", v.FailureHandler, "transient")
	check("v.HandlerTimeout", v.HandlerTimeout, time.Minute)
	check("v.KillGrace", v.KillGrace, time.Second)
	check("v.Executor", v.Executor, "slurm")
	check("v.Slurm", v.Slurm, &Slurm{Partition: "gpu", Account: "lab", QOS: "high", CPUs: 8, Mem: "16G", GPUs: "a100:2", Time: "1:00:00", ExtraArgs: []string{"--exclusive"}})
	check("v.OnFailure", v.OnFailure, OnFailure{
		Kind: OnCommand, Explicit: true,
		Command:        `/faber:debug --run-id {run_id} --problem "{error}" --auto-fix`,
		RetryOnSuccess: true, MaxRetries: 2, HandlerTimeout: time.Minute,
		Pos: v.OnFailure.Pos,
	})
	check("v.Command", v.Command, false)

	u := p.Step("upload")
	check("u.Run (prompt alias)", u.Run, "/faber:debug upload {version}")
	check("u.Command", u.Command, true)
	check("u.Phase", u.Phase, "publish")
	check("u.HandlerTimeout", u.HandlerTimeout, 5*time.Minute)
	check("u.KillGrace", u.KillGrace, 3*time.Second)
	check("u.Executor", u.Executor, "local")
	check("u.OnFailure", u.OnFailure, OnFailure{
		Kind: OnStructured, Explicit: true, Command: "/faber:debug",
		Args: []Arg{
			{Key: "auto-fix", Flag: true},
			{Key: "dry-run", Omit: true},
			{Key: "problem", Value: "{error}"},
			{Key: "level", Value: "3"},
		},
		RetryOnSuccess: false, MaxRetries: 3, HandlerTimeout: 20 * time.Second,
		Pos: u.OnFailure.Pos,
	})
	c := p.Step("child")
	check("c.Plan", c.Plan, "child.yaml")
	check("c.PlanPath", c.PlanPath, filepath.Join(dir, "child.yaml"))
	check("c.PlanContext", c.PlanContext, map[string]string{"table": "{dataset}-hd"})
	check("c.PlanContextKeys", c.PlanContextKeys, []string{"table"})
	check("c.Run", c.Run, "")
	n := p.Step("notify")
	check("n.OnFailure.Kind", n.OnFailure.Kind, OnContinue)
	check("n.OnFailure.Explicit", n.OnFailure.Explicit, true)

	if p.End == nil {
		t.Fatal("no end step")
	}
	check("End.ID", p.End.ID, "end")
	check("End.Name", p.End.Name, "Notify")
	check("End.Index", p.End.Index, -1)
	check("End.Run", p.End.Run, "./notify.sh {run_id}")
	check("End.Timeout", p.End.Timeout, time.Minute)
	check("End.Deps", len(p.End.Deps), 0)
	if p.Step("end") != nil {
		t.Error(`Step("end") should be nil: the end step is not in Steps`)
	}
}

func TestDefaults(t *testing.T) {
	p := mustParse(t, "name: x\nsteps:\n  - id: a\n    run: echo a\nfailure_handlers:\n  - name: h\n    rules: [{exit_codes: [1]}]\n", Options{})
	s := p.Steps[0]
	if s.Name != "a" {
		t.Errorf("Name = %q, want the id", s.Name)
	}
	if s.Phase != "main" || len(p.Phases) != 1 || p.Phases[0].Name != "main" || p.Phases[0].Parallel {
		t.Errorf("top-level steps should be one sequential phase main, got %+v", p.Phases[0])
	}
	want := OnFailure{Kind: OnStop, RetryOnSuccess: true, MaxRetries: 1, Pos: s.Pos}
	if !reflect.DeepEqual(s.OnFailure, want) {
		t.Errorf("OnFailure = %+v, want %+v", s.OnFailure, want)
	}
	if p.StopMode != StopDrain {
		t.Errorf("StopMode = %q", p.StopMode)
	}
	if p.Jobs != 0 || p.Shell != "" || p.Agent != nil || p.End != nil || p.Slurm != nil {
		t.Errorf("unexpected defaults: jobs %d shell %q agent %v end %v slurm %v", p.Jobs, p.Shell, p.Agent, p.End, p.Slurm)
	}
	r := p.FailureHandlers["h"].Rules[0]
	if r.MaxRetries != 3 || r.Backoff != BackoffFixed || r.StderrMatches != nil {
		t.Errorf("rule defaults: %+v", r)
	}
	if s.Pos != (Pos{Line: 3, Col: 5}) {
		t.Errorf("step Pos = %+v, want its id key 3:5", s.Pos)
	}
	if got := p.ShellFor(s); got != "sh" {
		t.Errorf("ShellFor = %q, want sh", got)
	}
	mustParse(t, "---\nname: x\nsteps: [{id: a, run: echo}]\n---\n", Options{}) // an empty trailing document is fine
	w := mustParse(t, "name: x\nsteps: [{id: a, run: echo}]\n", Options{GOOS: "windows"})
	if got := w.ShellFor(w.Steps[0]); got != "cmd" {
		t.Errorf("windows ShellFor = %q, want cmd", got)
	}
}

func TestJSONPlan(t *testing.T) {
	src := "{\n\t\"name\": \"j\",\n\t\"context\": {\"n\": 3},\n\t\"steps\": [\n\t\t{\"id\": \"a\", \"run\": \"echo {n} \\/ \\u00e9\"},\n\t\t{\"id\": \"b\", \"run\": \"echo b\", \"needs\": []}\n\t]\n}\n"
	p, inv := parseAt(t, filepath.Join(t.TempDir(), "plan.json"), src, Options{})
	if inv != nil {
		t.Fatalf("errors:\n%s", diagText(inv.Errors))
	}
	if p.Steps[0].Run != "echo {n} / é" || p.Context["n"] != "3" {
		t.Errorf("run = %q, context = %v", p.Steps[0].Run, p.Context)
	}
	_, inv = parseAt(t, filepath.Join(t.TempDir(), "plan.json"), "{\"name\": \"j\",\n \"stepz\": []}", Options{})
	if inv == nil || !strings.Contains(diagText(inv.Errors), `plan.json:2:2: plan: unknown field "stepz" (did you mean "steps"?)`) {
		t.Errorf("got %v", inv)
	}
	for _, tt := range []struct{ src, want string }{
		{"{\"name\": \"j\",\n  \"steps\": [}", "plan.json:2:13: invalid character '}' looking for beginning of value"},
		{"{\"name\": \"j\"", "plan.json:1:13: unexpected end of JSON input"},
		{"{\"name\": \"j\"} {}", "plan.json:1:16: unexpected data after the plan"},
		{"[1]", "plan.json:1:1: plan must be a mapping of fields (name, steps, ...), not a list"},
		{"{\"name\": \"j\", \"name\": \"k\", \"steps\": [{\"id\": \"a\", \"run\": \"x\"}]}", `plan.json:1:15: plan: duplicate key "name" (first at line 1)`},
		{strings.Repeat("[", 5000), "plan.json:1:1002: JSON nested too deeply"},
	} {
		_, inv := parseAt(t, filepath.Join(t.TempDir(), "plan.json"), tt.src, Options{})
		if inv == nil {
			t.Errorf("%q: no error", tt.src)
			continue
		}
		if got := strings.TrimSpace(diagText(inv.Errors[:1])); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestSets(t *testing.T) {
	src := "name: x\ncontext: {a: '1', b: '2'}\nsteps: [{id: s, run: 'echo {a} {b} {c}'}]\n"
	p := mustParse(t, src, Options{Sets: map[string]string{"b": "B", "c": "C"}, SetKeys: []string{"c", "b"}})
	if !reflect.DeepEqual(p.Context, map[string]string{"a": "1", "b": "B", "c": "C"}) {
		t.Errorf("Context = %v", p.Context)
	}
	if !reflect.DeepEqual(p.ContextKeys, []string{"a", "b", "c"}) {
		t.Errorf("ContextKeys = %v", p.ContextKeys)
	}
	_, inv := parse(t, src, Options{Sets: map[string]string{"Bad-Key": "x"}})
	if inv == nil || inv.Errors[0].Error() != "--set Bad-Key: key must match [a-z_][a-z0-9_]*" {
		t.Errorf("got %v", inv)
	}
	_, inv = parse(t, src, Options{})
	if inv == nil || !strings.Contains(inv.Error(), "unknown variable {c}") {
		t.Errorf("without --set c: got %v", inv)
	}
	vars := p.Vars(map[string]string{"step_id": "s"})
	if vars["a"] != "1" || vars["step_id"] != "s" {
		t.Errorf("Vars = %v", vars)
	}
}

// TestErrors checks each error's full first message, position included.
func TestErrors(t *testing.T) {
	head := "name: x\n"
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", "plan.yaml: plan is empty"},
		{"whitespace", "  \n\n# only a comment\n", "plan.yaml: plan is empty"},
		{"null", "~\n", "plan.yaml:1:1: plan is empty"},
		{"scalar", "hello\n", "plan.yaml:1:1: plan must be a mapping of fields (name, steps, ...), not \"hello\""},
		{"list", "- a\n", "plan.yaml:1:1: plan must be a mapping of fields (name, steps, ...), not a list"},
		{"syntax", "name: x\nsteps: [\n  a: b: c\n", "plan.yaml:3:3: did not find expected ',' or ']' (hint: is a quote or a bracket left open above?"},
		{"syntax indent", "name: x\nsteps:\n  - id: a\n   run: x\n", "plan.yaml:4:4: did not find expected '-' indicator (hint: "},
		{"syntax mapping value", "name: x\nsteps:\n  - id: a\n    run: x: y\n", "plan.yaml:4:5: mapping values are not allowed in this context (hint: "},
		{"syntax bad char", "name: x\n\nstop_mode: @x\n", "plan.yaml:3:12: found character that cannot start any token (hint: values starting with @, ` or % need quotes)"},
		{"unknown anchor", "name: x\nsteps: *nope\n", "plan.yaml:2: unknown anchor 'nope' referenced"},
		{"two docs", "name: x\n---\nname: y\n", "plan.yaml:3:1: plan has more than one YAML document"},
		{"empty docs", "---\n---\n", "plan.yaml:2:1: plan is empty"},
		{"no name", "steps: [{id: a, run: x}]\n", `plan.yaml:1:1: plan: missing required field "name"`},
		{"null name", "name:\nsteps: [{id: a, run: x}]\n", "plan.yaml:1:6: name: must not be empty"},
		{"null id", "name: x\nsteps: [{id: , run: x}]\n", "plan.yaml:2:14: steps[0]: id: must not be empty"},
		{"empty name", "name: ''\nsteps: [{id: a, run: x}]\n", "plan.yaml:1:7: name: must not be empty"},
		{"unknown field", head + "steps: [{id: a, run: x}]\ndescripton: d\n", `plan.yaml:3:1: plan: unknown field "descripton" (did you mean "description"?)`},
		{"step unknown field", head + "steps:\n  - id: deploy\n    run: x\n    result_handling:\n      on_faliure: stop\n", `plan.yaml:6:7: step "deploy": result_handling: unknown field "on_faliure" (did you mean "on_failure"?)`},
		{"on_failure at step level", head + "steps:\n  - run: x\n    on_failure: stop\n    id: deploy\n", `plan.yaml:4:5: step "deploy": unknown field "on_failure" (did you mean "result_handling: {on_failure: ...}"?)`},
		{"depends_on", head + "steps:\n  - {id: a, run: x, depends_on: [b]}\n", `plan.yaml:3:21: step "a": unknown field "depends_on" (did you mean "needs"?)`},
		{"jobs string", head + "jobs: many\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:7: jobs: must be an integer, not "many"`},
		{"jobs zero", head + "jobs: 0\nsteps: [{id: a, run: x}]\n", "plan.yaml:2:7: jobs: must be at least 1, not 0"},
		{"steps scalar", head + "steps: 3\n", "plan.yaml:2:8: steps: must be a list, not an integer"},
		{"steps empty", head + "steps: []\n", "plan.yaml:2:8: plan has no steps"},
		{"no steps", head + "description: d\n", "plan.yaml:1:1: plan has no steps (add steps: or phases:)"},
		{"phases and steps", head + "phases: [{name: p, steps: [{id: a, run: x}]}]\nsteps: [{id: b, run: x}]\n", "plan.yaml:3:1: plan has both phases and steps; use one of them"},
		{"phase no name", head + "phases:\n  - steps: [{id: a, run: x}]\n", `plan.yaml:3:5: phases[0]: missing required field "name"`},
		{"phase no steps", head + "phases:\n  - name: p\n    steps: []\n", `plan.yaml:4:12: phase "p": has no steps`},
		{"phase steps missing", head + "phases:\n  - name: p\n", `plan.yaml:3:5: phase "p": missing required field "steps"`},
		{"needs string", head + "steps:\n  - {id: a, run: x}\n  - {id: b, run: x, needs: a}\n", `plan.yaml:4:28: step "b": needs: must be a list, not "a"`},
		{"missing id", head + "steps:\n  - run: x\n", `plan.yaml:3:5: steps[0]: missing required field "id"`},
		{"bad id", head + "steps:\n  - id: Build\n    run: x\n", `plan.yaml:3:9: step "Build": id: "Build" must match [a-z0-9][a-z0-9._-]*`},
		{"duplicate id", head + "steps:\n  - id: a\n    run: x\n  - id: a\n    run: y\n", `plan.yaml:5:5: step "a": duplicate id (first at line 3)`},
		{"duplicate phase name", head + "phases:\n  - name: p\n    steps: [{id: a, run: x}]\n  - name: p\n    steps: [{id: b, run: y}]\n", `plan.yaml:5:11: phase "p": name: another phase is named "p" (first at line 3)`},
		{"reserved id", head + "steps:\n  - id: end\n    run: x\n", `plan.yaml:3:9: step "end": the id end is reserved for the end step (use end: for it)`},
		{"unknown needs", head + "steps:\n  - id: fetch\n    run: x\n  - id: b\n    run: x\n    needs: [fetc]\n", `plan.yaml:7:13: step "b": needs unknown step "fetc" (did you mean "fetch"?)`},
		{"needs end", head + "steps:\n  - id: a\n    run: x\n    needs: [end]\n", `plan.yaml:5:13: step "a": needs the end step, which always runs last`},
		{"self cycle", head + "steps:\n  - id: a\n    run: x\n    needs: [a]\n", `plan.yaml:5:12: step "a": cycle: a -> a`},
		{"unknown handler", head + "failure_handlers: [{name: transient, rules: [{exit_codes: [1]}]}]\nsteps:\n  - id: a\n    run: x\n    failure_handler: transiant\n", `plan.yaml:6:22: step "a": failure_handler "transiant" is not defined in failure_handlers (did you mean "transient"?)`},
		{"bad duration", head + "steps:\n  - id: a\n    run: x\n    timeout: 10 m\n", `plan.yaml:5:14: step "a": timeout: bad duration "10 m" (use Go syntax like 90s, 10m or 1h30m)`},
		{"number duration", head + "steps:\n  - id: a\n    run: x\n    timeout: 90\n", `plan.yaml:5:14: step "a": timeout: bad duration "90" (use Go syntax like 90s, 10m or 1h30m)`},
		{"negative duration", head + "kill_grace: -1s\nsteps: [{id: a, run: x}]\n", "plan.yaml:2:13: kill_grace: duration -1s must not be negative"},
		{"negative retries", head + "failure_handlers: [{name: h, rules: [{exit_codes: [1], max_retries: -1}]}]\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:69: failure handler "h": rules[0]: max_retries: must not be negative, not -1`},
		{"negative on_failure retries", head + "steps:\n  - id: a\n    run: x\n    result_handling: {on_failure: retry, max_retries: -2}\n", `plan.yaml:5:55: step "a": result_handling: max_retries: must not be negative, not -2`},
		{"rule without codes", head + "failure_handlers:\n  - name: h\n    rules:\n      - max_retries: 1\nsteps: [{id: a, run: x}]\n", `plan.yaml:5:9: failure handler "h": rules[0]: has neither exit_codes, on nor match_all_exit_codes: true`},
		{"bad regexp", head + "failure_handlers: [{name: h, rules: [{match_all_exit_codes: true, stderr_matches: 'a(b'}]}]\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:83: failure handler "h": rules[0]: stderr_matches: bad regexp: missing closing ): ` + "`a(b`"},
		{"bad backoff", head + "failure_handlers: [{name: h, rules: [{match_all_exit_codes: true, backoff: linear}]}]\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:76: failure handler "h": rules[0]: backoff: must be fixed or exponential, not "linear"`},
		{"duplicate handler", head + "failure_handlers:\n  - {name: h, rules: [{exit_codes: [1]}]}\n  - {name: h, rules: [{exit_codes: [1]}]}\nsteps: [{id: a, run: x}]\n", `plan.yaml:4:6: failure handler "h" is defined twice (first at line 3)`},
		{"no rules", head + "failure_handlers: [{name: h, rules: []}]\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:37: failure handler "h": has no rules`},
		{"stop mode", head + "stop_mode: halt\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:12: stop_mode: must be drain or cancel, not "halt"`},
		{"executor", head + "executor: k8s\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:11: executor: must be local, slurm or sge, not "k8s"`},
		{"run and prompt", head + "steps:\n  - id: a\n    run: x\n    prompt: y\n", `plan.yaml:5:13: step "a": has both run and prompt (prompt is an alias of run)`},
		{"no run", head + "steps:\n  - id: a\n    name: A\n", `plan.yaml:3:5: step "a": has neither run nor plan`},
		{"end without run", head + "steps: [{id: a, run: x}]\nend:\n  timeout: 1s\n", "plan.yaml:4:3: end step: has no run"},
		{"end with id", head + "steps: [{id: a, run: x}]\nend:\n  id: fin\n  run: x\n", `plan.yaml:4:3: end step: unknown field "id"`},
		{"end with needs", head + "steps: [{id: a, run: x}]\nend:\n  run: x\n  needs: [a]\n", `plan.yaml:5:3: end step: unknown field "needs"`},
		{"unknown variable", head + "steps:\n  - id: deploy\n    run: ./deploy.sh --data {dataset}\n", `plan.yaml:4:29: step "deploy": unknown variable {dataset}`},
		{"unknown variable quoted", head + "steps:\n  - id: deploy\n    run: \"echo 'é' {x}\"\n", `plan.yaml:4:20: step "deploy": unknown variable {x}`},
		{"unknown variable second", head + "context: {a: b}\nsteps:\n  - id: s\n    run: echo {a} {b} {a}\n", `plan.yaml:5:19: step "s": unknown variable {b}`},
		{"unknown variable block", head + "steps:\n  - id: s\n    run: |\n      echo hi\n      echo {nope}\n", `plan.yaml:6:12: step "s": unknown variable {nope}`},
		{"error in run", head + "steps:\n  - id: s\n    run: echo {error}\n", `plan.yaml:4:15: step "s": unknown variable {error} (only on_failure handlers and recovery scripts have it)`},
		{"unknown variable env", head + "steps:\n  - id: s\n    run: x\n    env: {A: '{zz}'}\n", `plan.yaml:5:15: step "s": unknown variable {zz}`},
		{"unknown variable dir", head + "steps:\n  - id: s\n    run: x\n    dir: out/{zz}\n", `plan.yaml:5:14: step "s": unknown variable {zz}`},
		{"unknown variable handler", head + "agent: [a]\nsteps:\n  - id: s\n    run: x\n    result_handling: {on_failure: '/fix {oops}'}\n", `plan.yaml:6:41: step "s": on_failure: unknown variable {oops}`},
		{"unknown variable args", head + "agent: [a]\nsteps:\n  - id: s\n    run: x\n    result_handling: {on_failure: {command: /fix, args: {p: '{oops}'}}}\n", `plan.yaml:6:62: step "s": on_failure: unknown variable {oops}`},
		{"unknown variable recovery", head + "failure_handlers: [{name: h, rules: [{exit_codes: [1], recovery_script: 'x {oops}'}]}]\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:76: failure handler "h": rules[0]: unknown variable {oops}`},
		{"unknown variable commands", head + "commands: {/x: 'sh {oops}'}\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:20: commands: /x: unknown variable {oops}`},
		{"unknown variable plan env", head + "env: {A: '{zz}'}\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:11: env: unknown variable {zz}`},
		{"handler variable via commands in run", head + "commands: {/dbg: 'sh {error}'}\nsteps:\n  - id: a\n    run: /dbg\n", `plan.yaml:5:10: step "a": run command /dbg: its commands: entry uses {error}, which a step's run does not have`},
		{"missing absolute program", head + "steps:\n  - id: a\n    run: /no/such/tool --x && echo ok\n", `plan.yaml:4:10: step "a": run command: `},
		{"context builtin", head + "context: {run_id: x}\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:11: context: "run_id" is a built-in variable and cannot be redefined`},
		{"context key", head + "context: {Work-ID: x}\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:11: context: key "Work-ID" must match [a-z_][a-z0-9_]*`},
		{"context nested", head + "context: {a: [1]}\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:14: context: a: must be a string or number, not a list`},
		{"commands key", head + "commands: {fix: x}\nsteps: [{id: a, run: x}]\n", `plan.yaml:2:12: commands: key "fix" must match /[A-Za-z0-9][A-Za-z0-9._:/-]*`},
		{"non posix shell", head + "shell: powershell\ncontext: {a: b}\nsteps:\n  - id: s\n    run: echo {a}\n", `plan.yaml:6:10: step "s": run uses {a} but shell "powershell" is not a POSIX shell (sh, bash, dash, zsh, ksh); substitution needs one`},
		{"unresolvable on_failure", head + "steps:\n  - id: x\n    run: x\n    result_handling:\n      on_failure: /faber:debug --problem \"{error}\"\n", `plan.yaml:6:19: step "x": on_failure command /faber:debug resolves nowhere: not in commands:, no executable .faber/commands/faber/debug, and no agent: set`},
		{"unresolvable run", head + "steps:\n  - id: x\n    run: /faber:implement\n", `plan.yaml:4:10: step "x": run command /faber:implement resolves nowhere: not in commands:, no executable .faber/commands/faber/implement, and no agent: set`},
		{"unresolvable structured", head + "steps:\n  - id: x\n    run: x\n    result_handling: {on_failure: {command: /nope}}\n", `plan.yaml:5:45: step "x": on_failure command /nope resolves nowhere: not in commands:, no executable .faber/commands/nope, and no agent: set`},
		{"structured not a command", head + "steps:\n  - id: x\n    run: x\n    result_handling: {on_failure: {command: fix}}\n", `plan.yaml:5:45: step "x": on_failure: command "fix" is not a /command or an absolute program path`},
		{"structured unknown field", head + "steps:\n  - id: x\n    run: x\n    result_handling: {on_failure: {comand: /fix}}\n", `plan.yaml:5:36: step "x": result_handling: on_failure: unknown field "comand" (did you mean "command"?)`},
		{"args null", head + "agent: [a]\nsteps:\n  - id: x\n    run: x\n    result_handling: {on_failure: {command: /fix, args: {v: }}}\n", `plan.yaml:6:61: step "x": result_handling: on_failure: args: v: has no value (use true for a flag)`},
		{"duplicate key", head + "steps: [{id: a, run: x}]\nname: y\n", `plan.yaml:3:1: plan: duplicate key "name" (first at line 1)`},
		{"context without plan", head + "steps:\n  - id: a\n    run: x\n    context: {a: b}\n", `plan.yaml:5:5: step "a": context is only for plan: steps (use the plan's context)`},
		{"missing sub-plan", head + "steps:\n  - id: a\n    plan: nothere.yaml\n", `plan.yaml:4:11: step "a": plan nothere.yaml: cannot read plan: no such file or directory`},
		{"self include", head + "steps:\n  - id: a\n    plan: plan.yaml\n", `plan.yaml:4:11: step "a": plan plan.yaml includes itself (plan.yaml -> plan.yaml)`},
		{"agent bad words", head + "agent: 'claude \"unterminated'\nsteps: [{id: a, run: x}]\n", "plan.yaml:2:8: agent: "},
		{"alias loop", head + "steps: &s [*s]\n", "plan.yaml:2:"},
		{"merge key ok then unknown", head + "base: &b {run: x}\nsteps:\n  - <<: *b\n    id: a\n", `plan.yaml:2:1: plan: unknown field "base"`},
		{"binary", "\x00\x01\x02\xff", "plan.yaml:1: control characters are not allowed"},
		{"bad utf-8", "name: \xff\n", "plan.yaml:1: invalid leading UTF-8 octet"},
		{"tab indent", "name: x\nsteps:\n\t- id: a\n", "plan.yaml:3:1: found character that cannot start any token (hint: YAML indents with spaces, not tabs)"},
		{"indentation", "name: x\nsteps:\n  - id: a\n    run: x\n   bad: [\n", "plan.yaml:5:4: did not find expected '-' indicator (hint: check this line's indentation"},
		{"colon in value", "name: x\nsteps:\n  - id: a\n    run: echo: hi\n", "plan.yaml:4:5: mapping values are not allowed in this context (hint: a value that holds ': ' needs quotes"},
		// The cause before its consequence (issue 34): a misspelt key, not
		// the step without run: it leaves behind.
		{"command for run", "name: x\nsteps:\n  - id: a\n    command: echo hi\n", `plan.yaml:4:5: step "a": unknown field "command" (did you mean "run"?)`},
		{"step for steps", "name: x\nstep:\n  - id: a\n    run: echo hi\n", `plan.yaml:2:1: plan: unknown field "step" (did you mean "steps"?)`},
		{"consequence alone", "name: x\nsteps:\n  - id: a\n", `plan.yaml:3:5: step "a": has neither run nor plan`},
		// faber's {var} is YAML's flow syntax: say so where the { is.
		{"flow mapping run", "name: x\ncontext: {msg: hi}\nsteps:\n  - id: a\n    run: {msg}\n", `plan.yaml:5:10: step "a": run: YAML reads {msg} as a mapping; quote it: "{msg}"`},
		{"flow mapping item", "name: x\ncontext: {m: hi}\nsteps:\n  - id: a\n    run: x\n    inputs: [{m}]\n", `plan.yaml:6:14: step "a": inputs[0]: YAML reads {m} as a mapping; quote it: "{m}"`},
		{"brace inside flow item", "name: x\ncontext: {r: '1'}\nsteps:\n  - id: a\n    run: x\n    outputs: [dist/p-{r}.tgz]\n", `plan.yaml:6:22: YAML reads the { of dist/p-{r}.tgz as the start of a mapping; quote the item: "dist/p-{r}.tgz"`},
		{"brace item start", "name: x\ncontext: {r: '1'}\nsteps:\n  - id: a\n    run: x\n    outputs: [\"a\", {r}.tgz]\n", `plan.yaml:6:20: YAML reads the { of {r}.tgz as the start of a mapping; quote the item: "{r}.tgz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, inv := parse(t, tt.src, Options{})
			if inv == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			got := inv.FirstCause()
			got.File = filepath.Base(got.File)
			if !strings.HasPrefix(got.Error(), tt.want) {
				t.Errorf("first cause:\n got %s\nwant %s\nall:\n%s", got.Error(), tt.want, diagText(inv.Errors))
			}
			if inv.Error() != inv.FirstCause().Error() {
				t.Errorf("Invalid.Error() = %q, want the first cause", inv.Error())
			}
			if strings.Contains(got.Message, "\n") {
				t.Errorf("message spans lines: %q", got.Message)
			}
		})
	}
}

func TestAllErrorsCollectedAndSorted(t *testing.T) {
	src := "name: x\njobs: 0\nsteps:\n  - id: a\n    run: echo {x}\n    timeout: soon\n  - id: a\n    run: y\n"
	_, inv := parse(t, src, Options{})
	if inv == nil {
		t.Fatal("no errors")
	}
	want := []string{
		"plan.yaml:2:7: jobs: must be at least 1, not 0",
		`plan.yaml:5:15: step "a": unknown variable {x}`,
		`plan.yaml:6:14: step "a": timeout: bad duration "soon" (use Go syntax like 90s, 10m or 1h30m)`,
		`plan.yaml:7:5: step "a": duplicate id (first at line 4)`,
	}
	if got := strings.Split(strings.TrimSpace(diagText(inv.Errors)), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOnFailureForms(t *testing.T) {
	tests := []struct {
		value   string
		kind    string
		invalid string
		warning string
	}{
		{"stop", OnStop, "", ""},
		{"continue", OnContinue, "", ""},
		{"retry", OnRetry, "", ""},
		{"/fix --problem '{error}'", OnCommand, "", ""},
		{"{command: /fix}", OnStructured, "", ""},
		{"invalid_value", OnStop, "invalid_value", `plan.yaml:6:19: step "s": on_failure "invalid_value" is not stop, continue, retry or a /command; treated as stop`},
		{"Stop", OnStop, "Stop", `plan.yaml:6:19: step "s": on_failure "Stop" is not stop, continue, retry or a /command (did you mean "stop"?); treated as stop`},
		{"retyr", OnStop, "retyr", `plan.yaml:6:19: step "s": on_failure "retyr" is not stop, continue, retry or a /command (did you mean "retry"?); treated as stop`},
		{"''", OnStop, `""`, `plan.yaml:6:19: step "s": on_failure is empty, not stop, continue, retry or a /command; treated as stop`},
		{"[a]", OnStop, "[...]", `plan.yaml:6:19: step "s": on_failure is a list, not stop, continue, retry or a /command; treated as stop`},
		{"{args: {a: 1}}", OnStop, "{...}", `plan.yaml:6:19: step "s": on_failure has no command; treated as stop`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			src := "name: x\nagent: [a]\nsteps:\n  - id: s\n    result_handling:\n      on_failure: " + tt.value + "\n    run: x\n"
			p := mustParse(t, src, Options{})
			of := p.Steps[0].OnFailure
			if of.Kind != tt.kind || !of.Explicit || of.Invalid != tt.invalid || of.MaxRetries != 1 || !of.RetryOnSuccess {
				t.Errorf("OnFailure = %+v", of)
			}
			got := strings.TrimSpace(diagText(p.Warnings))
			if got != tt.warning {
				t.Errorf("warnings = %q, want %q", got, tt.warning)
			}
			_, inv := parse(t, src, Options{Strict: true})
			if tt.warning == "" {
				if inv != nil {
					t.Errorf("strict: unexpected errors %s", diagText(inv.Errors))
				}
				return
			}
			if inv == nil {
				t.Fatal("strict: no error")
			}
			want := strings.TrimSuffix(tt.warning, "; treated as stop")
			if got := diagText(inv.Errors[:1]); strings.TrimSpace(got) != want {
				t.Errorf("strict error = %q, want %q", got, want)
			}
		})
	}
}

func TestProgramOnFailure(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	src := "name: x\nsteps:\n  - id: s\n    run: " + exe + " --flag && echo ok\n    result_handling: {on_failure: '" + exe + " --why {error}'}\n"
	p := mustParse(t, src, Options{})
	s := p.Steps[0]
	if s.Command || IsCommand(s.Run) {
		t.Errorf("run starting with an existing absolute path must stay a shell script")
	}
	if s.OnFailure.Kind != OnCommand {
		t.Errorf("on_failure with an absolute program: kind %q", s.OnFailure.Kind)
	}
	argv, kind, err := p.ResolveCommand(s.OnFailure.Command, nil, map[string]string{"error": "a b"})
	if err != nil || kind != KindProgram || !reflect.DeepEqual(argv, []string{exe, "--why", "a b"}) {
		t.Errorf("ResolveCommand = %q %q %v", argv, kind, err)
	}
}

func TestMergeKeysAndAnchors(t *testing.T) {
	src := `
name: x
phases:
  - name: p
    steps:
      - &base
        id: a
        run: echo {step_id}
        timeout: 1m
      - <<: *base
        id: b
      - <<: [*base]
        id: c
        timeout: 2m
`
	p := mustParse(t, src, Options{})
	got := []time.Duration{p.Steps[0].Timeout, p.Steps[1].Timeout, p.Steps[2].Timeout}
	if !reflect.DeepEqual(stepIDs(p.Steps), []string{"a", "b", "c"}) || !reflect.DeepEqual(got, []time.Duration{time.Minute, time.Minute, 2 * time.Minute}) {
		t.Errorf("steps %v timeouts %v", stepIDs(p.Steps), got)
	}
}

func TestAliasBomb(t *testing.T) {
	src := "name: x\nsteps:\n  - &a {id: a, run: x}\n"
	src += "x0: &x0 [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
	for i := 1; i < 9; i++ {
		prev := "*x" + string(rune('0'+i-1))
		src += "x" + string(rune('0'+i)) + ": &x" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n"
	}
	// Reference the bomb from a list the decoder walks.
	src = strings.Replace(src, "steps:\n", "phases:\n  - name: p\n    steps: *x8\nsteps:\n", 1)
	start := time.Now()
	_, inv := parse(t, src, Options{})
	if inv == nil {
		t.Fatal("no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("alias bomb took %s", d)
	}
}

func TestDidYouMean(t *testing.T) {
	keys := tableOf(reflect.TypeFor[rawStep]()).keys()
	tests := map[string]string{
		"on_faliure":      "",
		"failure_handlr":  `failure_handler`,
		"timout":          "timeout",
		"Timeout":         "timeout",
		"need":            "needs",
		"dependencies":    "needs",
		"cmd":             "run",
		"totally_unknown": "",
		"on_failure":      "result_handling: {on_failure: ...}",
	}
	for in, want := range tests {
		got := suggest(in, keys)
		if want == "" && got != "" || want != "" && got != ` (did you mean "`+want+`"?)` {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yml")
	writeFile(t, path, "name: x\nsteps: [{id: a, run: echo}]\n", 0o644)
	p, err := Load(path, Options{})
	if err != nil || p.File != path || p.Dir != dir {
		t.Fatalf("Load = %+v, %v", p, err)
	}
	_, err = Load(filepath.Join(dir, "missing.yaml"), Options{})
	var inv *Invalid
	if !errors.As(err, &inv) || !strings.HasSuffix(err.Error(), "missing.yaml: cannot read plan: no such file or directory") {
		t.Errorf("missing file: %v", err)
	}
}

func TestSubPlans(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "name: a\nsteps: [{id: s, plan: b.yaml}]\n", 0o644)
	writeFile(t, filepath.Join(dir, "b.yaml"), "name: b\nsteps: [{id: t, plan: a.yaml}]\n", 0o644)
	_, err := Load(filepath.Join(dir, "a.yaml"), Options{})
	if err == nil || !strings.Contains(err.Error(), `step "s": plan b.yaml: `) || !strings.Contains(err.Error(), "includes itself (a.yaml -> b.yaml -> a.yaml)") {
		t.Errorf("got %v", err)
	}
	// The child sees the step's context as --set values.
	writeFile(t, filepath.Join(dir, "c.yaml"), "name: c\nsteps: [{id: s, run: 'echo {table}'}]\n", 0o644)
	writeFile(t, filepath.Join(dir, "d.yaml"), "name: d\nsteps: [{id: s, plan: c.yaml, context: {table: t}}]\n", 0o644)
	if _, err := Load(filepath.Join(dir, "d.yaml"), Options{}); err != nil {
		t.Errorf("child with context: %v", err)
	}
	writeFile(t, filepath.Join(dir, "e.yaml"), "name: e\nsteps: [{id: s, plan: c.yaml}]\n", 0o644)
	if _, err := Load(filepath.Join(dir, "e.yaml"), Options{}); err == nil || !strings.Contains(err.Error(), "c.yaml:2:") || !strings.Contains(err.Error(), "unknown variable {table}") {
		t.Errorf("child without context: %v", err)
	}
}

func TestWindowsShell(t *testing.T) {
	src := "name: x\ncontext: {a: b}\nsteps: [{id: s, run: 'echo {a}'}]\n"
	_, inv := parse(t, src, Options{GOOS: "windows"})
	if inv == nil || !strings.Contains(inv.Error(), `shell "cmd" is not a POSIX shell`) {
		t.Errorf("got %v", inv)
	}
	mustParse(t, "shell: bash\n"+src, Options{GOOS: "windows"})
	mustParse(t, "name: x\nsteps: [{id: s, run: 'echo hi'}]\n", Options{GOOS: "windows"})
}

func TestTestdata(t *testing.T) {
	for _, name := range []string{"ok-phases.yaml", "ok-steps.json"} {
		p, err := Load(filepath.Join("testdata", name), Options{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(p.Warnings) > 0 {
			t.Errorf("%s: warnings %s", name, diagText(p.Warnings))
		}
	}
	_, err := Load(filepath.Join("testdata", "bad-many.yaml"), Options{})
	var inv *Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("bad-many.yaml: %v", err)
	}
	want := `bad-many.yaml:3:7: jobs: must be at least 1, not 0
bad-many.yaml:4:11: context: key "Bad-Key" must match [a-z_][a-z0-9_]*
bad-many.yaml:7:15: step "a": unknown variable {nope}
bad-many.yaml:8:14: step "a": timeout: bad duration "10 m" (use Go syntax like 90s, 10m or 1h30m)
bad-many.yaml:9:13: step "a": needs unknown step "zz"
bad-many.yaml:10:22: step "a": failure_handler "missing" is not defined in failure_handlers
bad-many.yaml:11:5: step "a": unknown field "on_failure" (did you mean "result_handling: {on_failure: ...}"?)
bad-many.yaml:12:5: step "a": duplicate id (first at line 6)
bad-many.yaml:13:10: step "a": run command /faber:debug resolves nowhere: not in commands:, no executable .faber/commands/faber/debug, and no agent: set
`
	if got := diagText(inv.Errors); got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

func TestScriptErrorsEveryStep(t *testing.T) {
	src := "name: x\ncontext: {n: '1'}\nsteps:\n  - id: a\n    run: echo $(( {n} + 1 ))\n  - id: b\n    run: echo $(( {n} + 1 ))\n"
	_, inv := parse(t, src, Options{})
	if inv == nil || len(inv.Errors) != 2 {
		t.Fatalf("got %v", inv)
	}
	for i, id := range []string{"a", "b"} {
		if want := `step "` + id + `": run: `; !strings.HasPrefix(inv.Errors[i].Message, want) {
			t.Errorf("error %d = %q, want prefix %q", i, inv.Errors[i].Message, want)
		}
	}
}

// A plan file over MaxPlanSize is one error naming the file and the limit,
// found before the YAML is read; at the limit the plan is read as usual.
func TestPlanSizeLimit(t *testing.T) {
	src := "name: p\nsteps:\n  - {id: a, run: \"true\"}\n# "
	edge := src + strings.Repeat("x", MaxPlanSize-len(src))
	if _, err := Parse("plan.yaml", []byte(edge), Options{}); err != nil {
		t.Fatalf("a plan of exactly %d bytes: %v", MaxPlanSize, err)
	}
	_, err := Parse("plan.yaml", []byte(edge+"x"), Options{})
	var inv *Invalid
	if !errors.As(err, &inv) || len(inv.Errors) != 1 {
		t.Fatalf("a plan one byte over: %v, want one error", err)
	}
	want := "plan.yaml: the plan is 16777217 bytes; a plan file may be at most 16777216 bytes (16 MiB): every run keeps a copy of its plan"
	if got := inv.Errors[0].Error(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestScriptProgramSkipsExports(t *testing.T) {
	for script, want := range map[string]string{
		"./fix.sh --x":                            "./fix.sh",
		"export A=\"$B\" C=d\n./fix.sh":           "./fix.sh",
		"export A=\"$B\"\nexport C=1\n../bin/fix": "../bin/fix",
		"export A=$(./gen)\n./fix.sh":             "",
		"export A=\"a b\"\n./fix.sh":              "",
		"export A=x; rm -rf y\n./fix.sh":          "",
		"export\n./fix.sh":                        "",
		"export A=\"$B\"":                         "",
		"A=1 ./fix.sh":                            "",
		"export 1A=x\n./fix.sh":                   "",
	} {
		if got := scriptProgram(script); got != want {
			t.Errorf("scriptProgram(%q) = %q, want %q", script, got, want)
		}
	}
}
