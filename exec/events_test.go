package exec

import (
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

var allPayloads = []Payload{
	&RunStarted{}, &RunResumed{}, &StepStatus{}, &StepOutput{}, &RetryReserved{}, &RecoveryFinished{},
	&HandlerInvoked{}, &StepOrphaned{}, &StepClassified{}, &Warning{}, &WorkflowEnded{}, &StepsReset{},
	&CacheHit{}, &CacheMiss{},
}

// TestPayloadKeysSorted: an event's JSON lists its payload's fields sorted
// by key (as it did when they were a map), so each payload declares them in
// that order.
func TestPayloadKeysSorted(t *testing.T) {
	for _, p := range allPayloads {
		typ := reflect.TypeOf(p).Elem()
		var keys []string
		for i := range typ.NumField() {
			k, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if k == "" || k == "-" {
				t.Errorf("%s.%s has no JSON key", typ.Name(), typ.Field(i).Name)
			}
			if isCommonKey(k) {
				t.Errorf("%s.%s: %q is a common field", typ.Name(), typ.Field(i).Name, k)
			}
			keys = append(keys, k)
		}
		if !sort.StringsAreSorted(keys) {
			t.Errorf("%s: keys not in order: %v", typ.Name(), keys)
		}
		if newPayload(p.eventType()) == nil || reflect.TypeOf(newPayload(p.eventType())) != reflect.TypeOf(p) {
			t.Errorf("%s: newPayload(%q) does not make it", typ.Name(), p.eventType())
		}
	}
}

// TestEventJSONTyped: each payload survives a round trip, and an event
// type this version does not know keeps its fields.
func TestEventJSONTyped(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := int64(12)
	evs := []Event{
		{Type: EvRunStarted, Data: &RunStarted{Jobs: 2, Plan: "p", PlanFile: "p.yaml", Steps: []StepInfo{{ID: "a", Name: "a", Phase: "main", Needs: []string{}}}, TotalSteps: 1}},
		{Type: EvStepStatus, StepID: "a", Attempt: 1, Status: StatusSuccess, ExitCode: intp(0), Data: &StepStatus{Phase: "main", StartedAt: &at, FinishedAt: &at, DurationMs: &ms}},
		{Type: EvHandlerInvoked, StepID: "a", Data: &HandlerInvoked{HandlerArgv: []string{"x", "<y>"}, HandlerResult: &HandlerResult{Status: "success"}}},
		{Type: EvWorkflowFailed, Status: RunFailed, Data: &WorkflowEnded{FailedSteps: []string{"a"}, FailedStepsCount: 1}},
		{Type: "from_the_future", Data: Other{"b": json.RawMessage(`2`), "a": json.RawMessage(`{"x":1}`)}},
	}
	for _, e := range evs {
		e.Seq, e.Time, e.RunID = 3, at, "r"
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		b2, _ := back.MarshalJSON()
		if string(b) != string(b2) {
			t.Errorf("round trip changed the JSON:\n%s\n%s", b, b2)
		}
		if reflect.TypeOf(back.Data) != reflect.TypeOf(e.Data) {
			t.Errorf("%s decoded as %T", e.Type, back.Data)
		}
	}
	o := evs[4]
	o.Seq, o.Time, o.RunID = 3, at, "r"
	b, _ := o.MarshalJSON()
	if want := `{"seq":3,"time":"2026-01-02T03:04:05Z","type":"from_the_future","run_id":"r","a":{"x":1},"b":2}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestChildEventParents: a child's event in the parent's JSON stream gets
// parent_run_id and parent_step_id among its sorted fields.
func TestChildEventParents(t *testing.T) {
	e := Event{Seq: 1, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Type: EvStepClassified, RunID: "child",
		StepID: "s", Data: &StepClassified{Action: "retry", Reason: "x"}, ParentRunID: "par", ParentStepID: "ps"}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":1,"time":"2026-01-02T03:04:05Z","type":"step_classified","run_id":"child","step_id":"s","action":"retry","parent_run_id":"par","parent_step_id":"ps","reason":"x"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || back.ParentRunID != "par" || back.ParentStepID != "ps" {
		t.Errorf("parents lost: %+v %v", back, err)
	}
}

// BenchmarkReplay10k: `faber status` of a finished 10,000-step run decodes
// its 20,001 events.
func BenchmarkReplay10k(b *testing.B) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var lines [][]byte
	add := func(e Event) {
		e.Seq, e.Time, e.RunID = int64(len(lines)+1), at, "r"
		j, err := e.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, j)
	}
	infos := make([]StepInfo, 10000)
	for i := range infos {
		infos[i] = StepInfo{ID: "s" + strconv.Itoa(i), Name: "s", Phase: "main", Needs: []string{}}
	}
	add(Event{Type: EvRunStarted, Data: &RunStarted{Plan: "p", Steps: infos, TotalSteps: len(infos)}})
	ms := int64(3)
	for _, in := range infos {
		add(Event{Type: EvStepStatus, StepID: in.ID, Attempt: 1, Status: StatusInProgress, Data: &StepStatus{Phase: "main", StartedAt: &at}})
		add(Event{Type: EvStepStatus, StepID: in.ID, Attempt: 1, Status: StatusSuccess, ExitCode: intp(0),
			Data: &StepStatus{Phase: "main", StartedAt: &at, FinishedAt: &at, DurationMs: &ms}})
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Replay(lines); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMarshalWellFormed: what marshal calls well formed (and the store then
// does not check again) is one line of valid JSON, whatever the strings
// hold; raw fields of an unknown event type and a payload that is not an
// object are left to the store's check.
func TestMarshalWellFormed(t *testing.T) {
	hostile := "a\nb\r\"c\\\x00\x1b\u2028\xff}{"
	var evs []Event
	for _, p := range allPayloads {
		for _, parent := range []string{"", hostile} {
			e := Event{Seq: 7, Time: time.Unix(1, 2), Type: hostile, RunID: hostile, StepID: hostile,
				Attempt: 2, Status: hostile, ExitCode: intp(3), Data: p, ParentRunID: parent, ParentStepID: parent}
			evs = append(evs, e)
		}
	}
	evs = append(evs, Event{Seq: 1, Type: EvWarning, RunID: "r", Data: &Warning{Message: hostile}},
		Event{Seq: 1, Type: "x", RunID: "r"})
	for _, e := range evs {
		b, ok, err := e.MarshalChecked()
		if err != nil {
			t.Fatalf("%T: %v", e.Data, err)
		}
		if !ok {
			t.Errorf("%T: not called well formed: %s", e.Data, b)
		}
		if !json.Valid(b) || strings.ContainsAny(string(b), "\r\n") || b[0] != '{' {
			t.Errorf("%T: called well formed but is not one line of JSON: %q", e.Data, b)
		}
	}
	for _, e := range []Event{
		{Seq: 1, Type: "new_type", RunID: "r", Data: Other{"k": json.RawMessage("[1,\n2]")}},
		{Seq: 1, Type: EvWarning, RunID: "r", Data: (*Warning)(nil)},
	} {
		if b, ok, err := e.MarshalChecked(); err == nil && ok {
			t.Errorf("%T: called well formed: %q", e.Data, b)
		}
	}
}

// TestAppendJSONString: the shortcut for plain ASCII writes what
// encoding/json writes, for every byte and around the escaped ones.
func TestAppendJSONString(t *testing.T) {
	strs := []string{"", "t[5]", "cachedfan-20261127T113848-4066", "a b", "~", "\u2028", "é", "\xff"}
	for c := 0; c < 256; c++ {
		strs = append(strs, string(rune(c)), "x"+string([]byte{byte(c)})+"y")
	}
	for _, s := range strs {
		got := appendJSONString(nil, s)
		want, _ := json.Marshal(s)
		if string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
}
