package exec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/faber-run/faber/spec"
)

func TestMasker(t *testing.T) {
	p := &spec.Plan{Context: map[string]string{"token": `ab"cd\ef`, "short": "xy", "open": "public"}, Secrets: []string{"token", "short"}}
	m := NewMasker(p)
	if got := m.String(`use ab"cd\ef and public`); got != "use *** and public" {
		t.Errorf("String = %q", got)
	}
	if got := string(m.Bytes([]byte(`{"x":"ab\"cd\\ef"}`))); got != `{"x":"***"}` {
		t.Errorf("the JSON-escaped form: %q", got)
	}
	if got := m.String("xy stays: too short to mask"); !strings.HasPrefix(got, "xy") {
		t.Errorf("a 2-character secret was masked: %q", got)
	}
	res := &HandlerResult{Message: `x ab"cd\ef`}
	argv := []string{"fix", `ab"cd\ef`}
	hi := &HandlerInvoked{HandlerCommand: `fix ab"cd\ef`, HandlerArgv: argv, HandlerResult: res}
	e := Event{Data: hi}
	m.Event(&e)
	got := e.Data.(*HandlerInvoked)
	if got.HandlerCommand != "fix ***" || got.HandlerArgv[1] != "***" || got.HandlerResult.Message != "x ***" {
		t.Errorf("event: %+v", got)
	}
	if res.Message != `x ab"cd\ef` || argv[1] != `ab"cd\ef` || hi.HandlerCommand != `fix ab"cd\ef` {
		t.Error("masking changed the runner's own records, not a copy")
	}
	we := Event{Data: &WorkflowEnded{FailedSteps: []string{`ab"cd\ef`}}}
	m.Event(&we)
	if we.Data.(*WorkflowEnded).FailedSteps[0] != "***" {
		t.Errorf("failed_steps not masked: %+v", we.Data)
	}
	o := Event{Data: Other{"x": []byte(`"say ab\"cd\\ef"`)}}
	m.Event(&o)
	if s := string(o.Data.(Other)["x"]); s != `"say ***"` {
		t.Errorf("an unknown event's field: %s", s)
	}
	var none *Masker
	if none.String("ab") != "ab" || NewMasker(&spec.Plan{}) != nil {
		t.Error("a plan without secrets masks")
	}
}

// TestMaskerForms: a value is masked in every form faber renders it: inside
// POSIX single quotes (handler_command), JSON-escaped with bytes that are
// not UTF-8 as U+FFFD, and each line of a multi-line value (lines shorter
// than spec.MinSecret stay).
func TestMaskerForms(t *testing.T) {
	m := NewMaskerOf([]string{"it's-a\nsecond\\line\xff\nab", `q"uo'te`})
	for _, c := range []struct{ in, want string }{
		{`fix 'it'\''s-a` + "\n" + `second\line` + "\xff" + `
ab'`, "fix '***'"},
		{"error: second\\line\xff", "error: ***"},
		{`{"e":"second\\line\ufffd"}`, `{"e":"***"}`},
		{"  it's-a  ", "  ***  "},
		{"ab stays", "ab stays"},
		{`run 'q"uo'\''te'`, "run '***'"},
		{`{"c":"run 'q\"uo'\\''te'"}`, `{"c":"run '***'"}`},
		{`{"c":"q\u0022uo"}`, `{"c":"q\u0022uo"}`},
	} {
		if got := m.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	type withMap struct{ M map[string]string }
	got := m.copy(reflect.ValueOf(withMap{M: map[string]string{"in-q\"uo'te": "second\\line\xff"}})).Interface().(withMap)
	if got.M["in-***"] != "***" {
		t.Errorf("a map: %v", got.M)
	}
}
