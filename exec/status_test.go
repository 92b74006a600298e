package exec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestStatusClassified: every step status has one expected answer from
// every classifying method (SPEC §3, §7, §8, §10), written here apart from
// the methods; a status constant missing from AllStatuses, or a status of
// AllStatuses missing from this table, fails the test.
func TestStatusClassified(t *testing.T) {
	type class struct{ active, terminal, succeeded, failed, resumable, satisfies bool }
	want := map[Status]class{
		StatusPending:           {},
		StatusInProgress:        {active: true},
		StatusRemediating:       {active: true},
		StatusRetrying:          {active: true},
		StatusSuccess:           {terminal: true, succeeded: true, satisfies: true},
		StatusCached:            {terminal: true, succeeded: true, satisfies: true},
		StatusSkipped:           {terminal: true, resumable: true, satisfies: true},
		StatusFailure:           {terminal: true, failed: true, resumable: true},
		StatusRemediationFailed: {terminal: true, failed: true, resumable: true},
		StatusPendingFailed:     {terminal: true, failed: true},
		StatusCanceled:          {terminal: true, resumable: true},
		StatusInterrupted:       {terminal: true, resumable: true},
		StatusAwaitingApproval:  {terminal: true, resumable: true},
	}
	all := AllStatuses()
	seen := map[Status]bool{}
	for _, s := range all {
		if seen[s] {
			t.Errorf("%s twice in AllStatuses", s)
		}
		seen[s] = true
		w, ok := want[s]
		if !ok {
			t.Errorf("%s: no expected classification in this test", s)
			continue
		}
		got := class{s.Active(), s.Terminal(), s.Succeeded(), s.Failed(), s.Resumable(), s.Satisfies()}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", s, got, w)
		}
		if !s.Known() {
			t.Errorf("%s: not Known", s)
		}
		if Terminal(string(s)) != s.Terminal() || Succeeded(string(s)) != s.Succeeded() {
			t.Errorf("%s: the string forms disagree with the methods", s)
		}
	}
	for s := range want {
		if !seen[s] {
			t.Errorf("%s: in this test but not in AllStatuses", s)
		}
	}
	for _, s := range statusConstants(t) {
		if !seen[Status(s)] {
			t.Errorf("constant %q is not in AllStatuses", s)
		}
	}
	// A status no faber writes (a newer version's, a damaged record) is
	// nothing: not active, not settled, neither success nor failure.
	if odd := Status("paused"); odd.Known() || odd.Active() || odd.Terminal() || odd.Succeeded() || odd.Failed() || odd.Resumable() {
		t.Errorf("an unknown status is classified")
	}
}

// statusConstants returns the values of the Status* constants declared in
// status.go, read from the source so that a new one cannot be forgotten.
func statusConstants(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "status.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Status") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: not a string literal", name.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Status constants found in status.go")
	}
	return out
}
