package exec

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// replayEvents is a history that touches every event Replayer reads, with
// what a JSON round trip changes: times in a zone, with a monotonic
// reading; bytes that are not UTF-8; a payload left out; a child's event
// and one of a type this version does not know; an end step that is not
// last in the replay order when a fan-out expands after it.
func replayEvents() []Event {
	zone := time.FixedZone("x", 5*3600+1800)
	t0 := time.Now().In(zone) // has a monotonic reading
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	ms := int64(1500)
	exit1 := 1
	bad := "bad \xff\xfe bytes"
	return []Event{
		{Type: EvRunStarted, Data: &RunStarted{Plan: "p", Steps: []StepInfo{
			{ID: "a", Name: "A " + bad, Phase: "one"},
			{ID: "fan", Name: "fan", Phase: "one", Needs: []string{"a"}},
			{ID: "b", Name: "b", Phase: "two", Needs: nil},
		}}},
		{Type: EvStepStatus, StepID: "a", Attempt: 1, Status: StatusInProgress, Data: &StepStatus{Phase: "one", StartedAt: at(0)}},
		{Type: EvStepStatus, StepID: "a", Attempt: 1, Status: StatusFailure, ExitCode: &exit1,
			Data: &StepStatus{Phase: "one", Error: "exit 1: " + bad, StartedAt: at(0), FinishedAt: at(time.Second), DurationMs: &ms,
				AttemptEnd: &AttemptEnd{Attempt: 1, ExitCode: new(1), Cause: "oom", Resources: &Resources{PeakRSSBytes: 1 << 20, MemoryLimitBytes: 2 << 20, Source: SourceRusage}}}},
		{Type: EvRetryReserved, StepID: "a", Data: &RetryReserved{MemoryBytes: 4 << 20}},
		{Type: EvHandlerInvoked, StepID: "a", Data: &HandlerInvoked{HandlerType: "command", HandlerCommand: "fix " + bad,
			HandlerResult: &HandlerResult{Status: "success", Message: bad, ActionTaken: "retry_step"}, RetryCount: 1, MaxRetries: 3}},
		{Type: EvStepClassified, StepID: "a", Data: &StepClassified{Action: "retry", TimeoutMs: 5000}},
		{Type: EvStepStatus, StepID: "end", Attempt: 1, Status: StatusSuccess}, // no payload: an empty one
		{Type: EvStepStatus, StepID: "late", Attempt: 1, Status: StatusInProgress, Data: &StepStatus{}},
		{Type: EvFanOutExpanded, StepID: "fan", Data: &FanOutExpanded{Items: []StepInfo{
			{ID: "fan[1]", Name: "fan[1]", Phase: "one", FanOut: "fan", Needs: []string{}},
			{ID: "fan[2]", Name: "fan[2]", Phase: "one", FanOut: "fan"},
		}, Needs: []string{"a", "fan[1]", "fan[2]"}}},
		{Type: EvStepCacheHit, StepID: "fan[1]", Data: &CacheHit{CachedRunID: "old", CachedAttempt: 2, CachedSeq: 7}},
		{Type: EvStepStatus, StepID: "fan[1]", Attempt: 0, Status: StatusCached, Data: &StepStatus{Phase: "one", CacheKey: "k"}},
		{Type: "some_new_event", StepID: "b", Data: Other{"x": json.RawMessage(`1`)}},
		{Type: EvStepStatus, StepID: "b", Attempt: 1, Status: StatusSuccess, ParentRunID: "parent", Data: &StepStatus{Phase: "two"}},
		{Type: EvWorkflowFailed, Status: RunPendingFailed, Data: &WorkflowEnded{FailedSteps: []string{"a"}}},
		{Type: EvRunResumed, Data: &RunResumed{Steps: []StepInfo{{ID: "b", Name: "b", Phase: "two"}, {ID: "a", Name: "a", Phase: "one"}, {ID: "fan", Name: "fan"}}}},
		{Type: EvFanOutExpanded, StepID: "fan", Data: &FanOutExpanded{Items: []StepInfo{
			{ID: "fan[2]", Name: "fan[2]", Phase: "one", FanOut: "fan"},
			{ID: "fan[3]", Name: "fan[3]", Phase: "one", FanOut: "fan"},
		}, Removed: []string{"fan[1]"}, Needs: []string{"a", "fan[2]", "fan[3]"}}},
		{Type: EvWorkflowCompleted, Data: &WorkflowEnded{}},
	}
}

// stamped numbers and marshals events as a commit does.
func stamped(t *testing.T, evs []Event, after int64) []Event {
	t.Helper()
	Stamp(evs, after, "p-1", time.Now().In(time.FixedZone("y", -3*3600)))
	for i := range evs {
		b, err := evs[i].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		evs[i].JSON = b
	}
	return evs
}

func viewJSON(t *testing.T, v *View) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func replayOf(t *testing.T, evs []Event) *View {
	t.Helper()
	var lines [][]byte
	for _, e := range evs {
		lines = append(lines, e.JSON)
	}
	v, err := Replay(lines)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The view an owner keeps from its commits (Committed) is the one a replay
// of their JSON gives, whatever the committer changes afterwards.
func TestReplayerCommittedIsReplay(t *testing.T) {
	evs := stamped(t, replayEvents(), 0)
	p := NewReplayer()
	for i := range evs {
		p.Committed(evs[i : i+1])
	}
	// The committer's own values change afterwards; the view must not.
	for _, e := range evs {
		if d, ok := e.Data.(*StepStatus); ok && d.AttemptEnd != nil {
			d.AttemptEnd.Cause = "changed"
			d.AttemptEnd.Resources.PeakRSSBytes = 1
		}
		if d, ok := e.Data.(*RunStarted); ok {
			d.Steps[1].Needs[0] = "changed"
		}
		if e.ExitCode != nil {
			*e.ExitCode = 99
		}
	}
	got, want := viewJSON(t, p.View()), viewJSON(t, replayOf(t, evs))
	if got != want {
		t.Fatalf("view from commits:\n%s\nreplay:\n%s", got, want)
	}
}

// A Replayer continued from a view (its JSON read back, and EndAt) ends
// where one that took in every event does.
func TestReplayerOfContinues(t *testing.T) {
	evs := stamped(t, replayEvents(), 0)
	want := viewJSON(t, replayOf(t, evs))
	for cut := 0; cut <= len(evs); cut++ {
		p := NewReplayer()
		p.Committed(evs[:cut])
		b, err := json.Marshal(p.View())
		if err != nil {
			t.Fatal(err)
		}
		var v View
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		q := ReplayerOf(&v, p.EndAt())
		for _, e := range evs[cut:] {
			if err := q.Read(e.JSON); err != nil {
				t.Fatal(err)
			}
		}
		if got := viewJSON(t, q.View()); got != want {
			t.Fatalf("continued after %d events:\n%s\nwant:\n%s", cut, got, want)
		}
	}
}

// The history above must reach what it is meant to: the end step ahead of
// steps in the order, U+FFFD where bytes were not UTF-8.
func TestReplayEventsCoverage(t *testing.T) {
	evs := stamped(t, replayEvents(), 0)
	p := NewReplayer()
	p.Committed(evs[:10])
	if p.EndAt() < 0 || p.EndAt() == len(p.order)-1 {
		t.Fatalf("end step at %d of %v: not ahead of another step", p.EndAt(), p.order)
	}
	if v := replayOf(t, evs); !bytes.Contains([]byte(v.Steps[0].Error), []byte("\uFFFD")) && !bytes.Contains([]byte(viewJSON(t, v)), []byte("\uFFFD")) {
		t.Fatal("no U+FFFD in the view")
	}
}

// jsonTime must be the JSON round trip of every time, whatever its zone
// and the local one, with and without a monotonic reading.
func TestJSONTimeIsRoundTrip(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	zones := []*time.Location{time.UTC, time.FixedZone("IST", 5*3600+30*60), time.FixedZone("PST", -8*3600),
		time.FixedZone("LMT", 17*60+30), time.FixedZone("far", 24*3600+60), time.FixedZone("", 0)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zones = append(zones, ny) // its offset changes within the year
	}
	r := rand.New(rand.NewPCG(4, 2))
	for _, local := range zones {
		time.Local = local
		for i := range 4000 {
			sec := r.Int64N(400e9) - 70e9 // years from about -250 to 10,600
			if i%2 == 0 {
				sec = r.Int64N(4e9)
			}
			tm := time.Unix(sec, r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
			if i%7 == 0 {
				tm = time.Now().In(zones[r.IntN(len(zones))]) // a monotonic reading
			}
			if i%11 == 0 {
				tm = tm.In(time.Local)
			}
			want := tm
			if b, err := tm.MarshalJSON(); err != nil || want.UnmarshalJSON(b) != nil {
				want = normTime(tm)
			}
			if got := jsonTime(tm); !reflect.DeepEqual(got, want) {
				t.Fatalf("local %s: jsonTime(%v) = %v (%#v), want %v (%#v)", local, tm, got, got.Location(), want, want.Location())
			}
		}
	}
}
