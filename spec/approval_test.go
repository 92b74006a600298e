package spec

import (
	"strings"
	"testing"
	"time"
)

// TestApprovalForms: approval: true, a prompt and a mapping build a gate
// (on_timeout defaults to reject); false and null build none; a phase's
// gate holds its entry steps only (no needs inside the phase).
func TestApprovalForms(t *testing.T) {
	p := mustParse(t, `name: g
phases:
  - name: ph
    approval: Go?
    steps:
      - id: a
        run: "true"
        approval: true
      - id: b
        run: "true"
        approval: Ship it?
      - id: c
        run: "true"
        needs: []
        approval: {prompt: P, timeout: 2m, on_timeout: approve}
      - id: d
        run: "true"
        approval: false
      - id: e
        run: "true"
        needs: [d]
        approval: {timeout: 1s}
`, Options{})
	want := map[string]*Approval{
		"a": {OnTimeout: RejectDecision},
		"b": {Prompt: "Ship it?", OnTimeout: RejectDecision},
		"c": {Prompt: "P", Timeout: 2 * time.Minute, OnTimeout: ApproveDecision},
		"d": nil,
		"e": {Timeout: time.Second, OnTimeout: RejectDecision},
	}
	entry := map[string]bool{"a": true, "c": true}
	for id, w := range want {
		s := p.Step(id)
		got := s.Approval
		switch {
		case w == nil && got != nil, w != nil && got == nil:
			t.Errorf("%s: approval %+v, want %+v", id, got, w)
		case w != nil && (got.Prompt != w.Prompt || got.Timeout != w.Timeout || got.OnTimeout != w.OnTimeout):
			t.Errorf("%s: approval %+v, want %+v", id, got, w)
		}
		if s.PhaseGate != entry[id] {
			t.Errorf("%s: PhaseGate %v, want %v", id, s.PhaseGate, entry[id])
		}
	}
	if a := p.Phases[0].Approval; a == nil || a.Prompt != "Go?" {
		t.Errorf("phase approval %+v", a)
	}
}

// TestApprovalErrors: every malformed gate is an error at its position.
func TestApprovalErrors(t *testing.T) {
	for _, c := range []struct{ field, want string }{
		{"approval: {on_timeout: approve}", `plan.yaml:5:28: step "a": approval: on_timeout without timeout`},
		{"approval: {timeout: 0s}", `plan.yaml:5:25: step "a": approval: timeout must be more than 0`},
		{"approval: [1]", `plan.yaml:5:15: step "a": approval: must be true, a prompt, or {prompt, timeout, on_timeout}, not a list`},
		{"approval: {timeout: 1m, on_timeout: maybe}", `step "a": approval: on_timeout: must be reject or approve, not "maybe"`},
	} {
		_, inv := parse(t, "name: v\nsteps:\n  - id: a\n    run: \"true\"\n    "+c.field+"\n", Options{})
		if inv == nil {
			t.Errorf("%s: no error", c.field)
			continue
		}
		if got := diagText(inv.Errors); !strings.Contains(got, c.want) {
			t.Errorf("%s:\n%s\nwant %s", c.field, got, c.want)
		}
	}
	_, inv := parse(t, "name: v\nsteps:\n  - id: a\n    run: \"true\"\nend:\n  run: \"true\"\n  approval: true\n", Options{})
	if inv == nil || !strings.Contains(diagText(inv.Errors), `end step: unknown field "approval"`) {
		t.Errorf("approval on the end step: %v", inv)
	}
}
