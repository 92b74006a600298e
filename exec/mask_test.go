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
	e := Event{Fields: map[string]any{"handler_command": `fix ab"cd\ef`, "failed_steps": []string{`ab"cd\ef`}, "handler_result": &HandlerResult{Message: `x ab"cd\ef`}}}
	m.Event(&e)
	if e.Fields["handler_command"] != "fix ***" || e.Fields["failed_steps"].([]string)[0] != "***" || e.Fields["handler_result"].(*HandlerResult).Message != "x ***" {
		t.Errorf("event: %+v", e.Fields)
	}
	var none *Masker
	if none.String("ab") != "ab" || NewMasker(&spec.Plan{}) != nil {
		t.Error("a plan without secrets masks")
	}
}
