package exec

import (
	"strings"
	"testing"

	"github.com/faber-run/faber/spec"
)

// TestDirectWords: only plain words run without a shell.
func TestDirectWords(t *testing.T) {
	cases := map[string]string{
		"true":                     "true",
		"  make -j4 all VAR=1  ":   "make|-j4|all|VAR=1",
		"./tool.sh --x=a,b@c:d%e+": "./tool.sh|--x=a,b@c:d%e+",
		"echo hi":                  "", // a builtin
		"cd /tmp":                  "",
		"exit 3":                   "",
		"FOO=1 prog":               "", // an assignment
		"prog $HOME":               "", // expansion
		"prog 'a b'":               "", // quoting
		"prog *.txt":               "", // globbing
		"prog > out":               "", // redirection
		"a; b":                     "",
		"a && b":                   "",
		"prog ~/x":                 "",
		"prog # note":              "",
		"prog\nother":              "",
		"prog {x}":                 "",
		"":                         "",
	}
	p := &spec.Plan{}
	for script, want := range cases {
		s := &spec.Step{StepBody: &spec.StepBody{Run: script}}
		if got := strings.Join(DirectWords(p, s, script), "|"); got != want {
			t.Errorf("%q: %q, want %q", script, got, want)
		}
	}
	if DirectWords(&spec.Plan{Shell: "bash"}, &spec.Step{StepBody: &spec.StepBody{}}, "true") != nil {
		t.Error("a plan shell: still runs without it")
	}
	if DirectWords(p, &spec.Step{StepBody: &spec.StepBody{Env: map[string]string{"PATH": "/x"}}}, "true") != nil {
		t.Error("a step that sets PATH runs without the shell that would use it")
	}
}
