package exec

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNotifyKindsOf(t *testing.T) {
	for _, tc := range []struct {
		typ, status, want string
	}{
		{EvStepStatus, StatusFailure, "step_failed"},
		{EvStepStatus, StatusRemediationFailed, "step_failed"},
		{EvStepStatus, StatusRetrying, ""},
		{EvStepStatus, StatusRemediating, ""},
		{EvStepStatus, StatusCanceled, ""},
		{EvStepStatus, StatusInterrupted, ""},
		{EvStepStatus, StatusSuccess, ""},
		{EvStepStatus, StatusPendingFailed, "awaiting_decision"},
		{EvStepStatus, "awaiting_approval", "awaiting_decision"},
		{EvWorkflowCompleted, RunSuccess, "run_finished"},
		{EvWorkflowFailed, RunFailed, "run_finished run_failed"},
		{EvWorkflowFailed, RunRemediationFailed, "run_finished run_failed"},
		{EvWorkflowFailed, RunPendingFailed, "run_finished"},
		{EvWorkflowFailed, RunInterrupted, "run_finished run_interrupted"},
		{EvNotifyFailed, "", ""},
		{EvStepClassified, "", ""},
	} {
		e := Event{Type: tc.typ, Status: tc.status}
		if got := strings.Join(NotifyKindsOf(&e), " "); got != tc.want {
			t.Errorf("%s %s: kinds %q, want %q", tc.typ, tc.status, got, tc.want)
		}
	}
}

// A notification's stdin is the event's JSON object with "notify" added.
func TestNotifyInput(t *testing.T) {
	e := Event{Seq: 3, Type: EvStepStatus, RunID: "r", StepID: "a", Status: StatusFailure, Data: &StepStatus{Error: `say "no" <now>`}}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	in := notifyInput(b, "step_failed")
	if !strings.HasSuffix(string(in), "}\n") || strings.Count(string(in), "\n") != 1 {
		t.Fatalf("input %q: want one line", in)
	}
	var m map[string]any
	if err := json.Unmarshal(in, &m); err != nil {
		t.Fatalf("input %q: %v", in, err)
	}
	if m["notify"] != "step_failed" || m["step_id"] != "a" || m["error"] != `say "no" <now>` || m["seq"] != 3.0 {
		t.Errorf("input %q", in)
	}
	if got := string(notifyInput([]byte("{}"), "run_failed")); got != "{\"notify\":\"run_failed\"}\n" {
		t.Errorf("empty event: %q", got)
	}
}

// notify_failed reads back as what was written.
func TestNotifyFailedRoundTrip(t *testing.T) {
	e := Event{Seq: 5, Type: EvNotifyFailed, RunID: "r", ExitCode: intp(124),
		Data: &NotifyFailed{Command: "sleep 9", Error: "timed out after 1s", Index: 2, Kind: "run_finished", Log: "logs/_notify/4-run_finished-2.err", TriggerSeq: 4}}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	d, ok := back.Data.(*NotifyFailed)
	if !ok || *d != *e.Data.(*NotifyFailed) || back.ExitCode == nil || *back.ExitCode != 124 {
		t.Errorf("read back %s as %+v", b, back)
	}
}

// notify_failed is checked with every other payload (TestPayloadKeysSorted,
// TestEventJSONTyped).
func init() { allPayloads = append(allPayloads, &NotifyFailed{}) }
