package spec

import (
	"strings"
	"testing"
	"time"
)

func TestNotifyParsed(t *testing.T) {
	p := mustParse(t, `
name: n
context: {channel: ops}
notify:
  - on: [run_failed, step_failed, run_failed]
    run: notify-send "{plan}" "{event} {step_id} {status} {error} {channel}"
  - on: [run_finished, awaiting_decision, run_interrupted]
    run: cat > last.json
    timeout: 5s
steps:
  - id: a
    run: "true"
`, Options{})
	if len(p.Notify) != 2 {
		t.Fatalf("notify: %d entries, want 2", len(p.Notify))
	}
	n0, n1 := p.Notify[0], p.Notify[1]
	if strings.Join(n0.On, ",") != "run_failed,step_failed" || n0.Timeout != NotifyDefaultTimeout || n0.Pos.Line != 5 {
		t.Errorf("notify[0] = %+v", n0)
	}
	if n1.Timeout != 5*time.Second || !n1.Wants(NotifyAwaitingDecision) || n1.Wants(NotifyStepFailed) {
		t.Errorf("notify[1] = %+v", n1)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %s", diagText(p.Warnings))
	}
}

func TestNotifyErrors(t *testing.T) {
	for _, tc := range []struct{ plan, want string }{
		{"notify:\n  - on: [run_finishd]\n    run: 'true'\n",
			`plan.yaml:3:10: notify[0]: on: unknown event kind "run_finishd" (did you mean "run_finished"?)`},
		{"notify:\n  - on: [done]\n    run: 'true'\n",
			`plan.yaml:3:10: notify[0]: on: unknown event kind "done" (use run_finished, run_failed, step_failed, awaiting_decision or run_interrupted)`},
		{"notify:\n  - on: []\n    run: 'true'\n",
			`plan.yaml:3:9: notify[0]: on: name at least one event kind`},
		{"notify:\n  - run: 'true'\n",
			`plan.yaml:3:5: notify[0]: missing required field "on"`},
		{"notify:\n  - on: [run_failed]\n",
			`plan.yaml:3:5: notify[0]: missing required field "run"`},
		{"notify:\n  - on: [run_failed]\n    run: echo {evnt}\n",
			`plan.yaml:4:15: notify[0]: run: unknown variable {evnt} (did you mean "event"?)`},
		{"notify:\n  - on: [run_failed]\n    run: echo {attempt}\n",
			`plan.yaml:4:15: notify[0]: run: unknown variable {attempt}`},
		{"notify:\n  - on: [run_failed]\n    run: 'true'\n    timeout: 0s\n",
			`plan.yaml:5:14: notify[0]: timeout must be more than 0`},
		{"notify:\n  - on: [run_failed]\n    run: 'true'\n    timeout: soon\n",
			`plan.yaml:5:14: notify[0]: timeout: bad duration "soon"`},
		{"notify:\n  - on: [run_failed]\n    run: echo $(( {error} ))\n",
			`plan.yaml:4:10: notify[0]: run:`},
		{"notify:\n  - on: [run_failed]\n    run: 'true'\n    when: always\n",
			`plan.yaml:5:5: notify[0]: unknown field "when"`},
	} {
		src := "name: n\n" + tc.plan + "steps:\n  - id: a\n    run: 'true'\n"
		_, inv := parse(t, src, Options{})
		if inv == nil {
			t.Errorf("%s: parsed, want error %q", tc.plan, tc.want)
			continue
		}
		if got := diagText(inv.Errors); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: errors\n%s\nwant first %q", tc.plan, got, tc.want)
		}
	}
}

// A context variable that only a notification uses is used: no warning
// for an unused --set.
func TestNotifyUsesSets(t *testing.T) {
	p := mustParse(t, "name: n\nnotify:\n  - on: [run_failed]\n    run: curl {hook}\nsteps:\n  - id: a\n    run: 'true'\n",
		Options{Sets: map[string]string{"hook": "https://example.invalid"}, SetKeys: []string{"hook"}})
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %s", diagText(p.Warnings))
	}
}
