package exec

import (
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
