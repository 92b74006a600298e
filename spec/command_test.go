package spec

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestIsCommand(t *testing.T) {
	for s, want := range map[string]bool{
		"/faber:debug --x":  true,
		"  /x":              true,
		"/":                 true,
		"./x.sh":            false,
		"echo /x":           false,
		"":                  false,
		"/no/such/file arg": true,
		"stop":              false,
	} {
		if got := IsCommand(s); got != want {
			t.Errorf("IsCommand(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".faber/commands/faber/debug"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(dir, ".faber/commands/both"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(dir, ".faber/commands/noexec"), "#!/bin/sh\n", 0o644)
	writeFile(t, filepath.Join(dir, "scripts/both.sh"), "#!/bin/sh\n", 0o755)
	src := `name: x
context: {dataset: ipeds}
commands:
  /both: ./scripts/both.sh --from-map
  /bare: sh sub
agent: [claude, -p]
steps: [{id: a, run: x}]
`
	p, inv := parseAt(t, filepath.Join(dir, "plan.yaml"), src, Options{})
	if inv != nil {
		t.Fatal(diagText(inv.Errors))
	}
	noAgent := *p
	noAgent.Agent = nil
	vars := p.Vars(map[string]string{"error": "bad thing", "run_id": "r1"})
	tests := []struct {
		plan     *Plan
		line     string
		args     []Arg
		wantArgv []string
		wantKind string
		wantErr  string
	}{
		{p, "/both --x {dataset}", nil, []string{filepath.Join(dir, "scripts/both.sh"), "--from-map", "--x", "ipeds"}, KindCommands, ""},
		{p, "/bare", nil, []string{"sh", "sub"}, KindCommands, ""},
		{p, "/faber:debug --problem \"{error}\"", nil, []string{filepath.Join(dir, ".faber/commands/faber/debug"), "--problem", "bad thing"}, KindFile, ""},
		{p, "/x --problem {error}", nil, []string{"claude", "-p", "/x --problem 'bad thing'"}, KindAgent, ""},
		{p, "/noexec", nil, []string{"claude", "-p", "/noexec"}, KindAgent, ""},
		{p, "/x", []Arg{{Key: "auto-fix", Flag: true}, {Key: "dry", Omit: true}, {Key: "problem", Value: "{error}; rm -rf /"}, {Key: "n", Value: "3"}},
			[]string{"claude", "-p", "/x --auto-fix --problem 'bad thing; rm -rf /' --n 3"}, KindAgent, ""},
		{p, "/faber:debug", []Arg{{Key: "id", Value: "{run_id}"}}, []string{filepath.Join(dir, ".faber/commands/faber/debug"), "--id", "r1"}, KindFile, ""},
		{&noAgent, "/x", nil, nil, "", "/x resolves nowhere: not in commands:, no executable .faber/commands/x, and no agent: set"},
		{&noAgent, "/noexec", nil, nil, "", "/noexec resolves nowhere: not in commands:, .faber/commands/noexec is not executable, and no agent: set"},
		{&noAgent, "/a/../../../etc/passwd", nil, nil, "", "resolves nowhere"},
		{p, "/x {nope}", nil, nil, "", "nope"},
		{p, "/x $(rm -rf /)", nil, nil, "", ""},
		{p, "fix", nil, nil, "", `"fix" is not a /command`},
		{p, "", nil, nil, "", "empty"},
	}
	for _, tt := range tests {
		argv, kind, err := tt.plan.ResolveCommand(tt.line, tt.args, vars)
		if tt.wantArgv == nil {
			if err == nil {
				t.Errorf("ResolveCommand(%q) = %q, want an error", tt.line, argv)
			} else if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ResolveCommand(%q) error %q, want it to contain %q", tt.line, err, tt.wantErr)
			}
			continue
		}
		if err != nil || kind != tt.wantKind || !reflect.DeepEqual(argv, tt.wantArgv) {
			t.Errorf("ResolveCommand(%q) = %q, %q, %v; want %q, %q", tt.line, argv, kind, err, tt.wantArgv, tt.wantKind)
		}
	}
}

// TestValidateResolution checks that validation uses the same resolution.
func TestValidateResolution(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".faber/commands/faber/debug"), "#!/bin/sh\n", 0o755)
	src := "name: x\nsteps:\n  - id: a\n    run: /faber:debug {step_id}\n    result_handling: {on_failure: '/faber:debug --problem \"{error}\"'}\n"
	p, inv := parseAt(t, filepath.Join(dir, "plan.yaml"), src, Options{})
	if inv != nil {
		t.Fatal(diagText(inv.Errors))
	}
	if !p.Steps[0].Command {
		t.Error("run /faber:debug should be a command")
	}
	if _, inv := parseAt(t, filepath.Join(t.TempDir(), "plan.yaml"), src, Options{}); inv == nil {
		t.Error("without .faber/commands the plan should be invalid")
	}
}
