package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// runLog writes events as a run's log would hold them.
type runLog struct {
	t      testing.TB
	seq    int64
	events [][]byte
}

func (l *runLog) add(at time.Duration, typ, step string, attempt int, status string, exit *int, data exec.Payload) {
	l.t.Helper()
	l.seq++
	e := exec.Event{Seq: l.seq, Time: t0.Add(at), Type: typ, RunID: "r1", StepID: step, Attempt: attempt, Status: status, ExitCode: exit, Data: data}
	b, err := e.MarshalJSON()
	if err != nil {
		l.t.Fatal(err)
	}
	l.events = append(l.events, b)
}

func intp(n int) *int { return &n }

func tp(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// attempt logs one attempt of a step from a to b, ending with status.
func (l *runLog) attempt(step string, n int, a, b time.Duration, exit int, status string) {
	l.add(a, exec.EvStepStatus, step, n, exec.StatusInProgress, nil, &exec.StepStatus{Phase: "main", StartedAt: tp(a)})
	ms := int64((b - a) / time.Millisecond)
	l.add(b, exec.EvStepStatus, step, n, status, intp(exit), &exec.StepStatus{Phase: "main", StartedAt: tp(a), FinishedAt: tp(b), DurationMs: &ms,
		AttemptEnd: &exec.AttemptEnd{Attempt: n, ExitCode: intp(exit), Resources: &exec.Resources{PeakRSSBytes: 100 << 20, MemoryLimitBytes: 200 << 20, Source: "rusage", UserMs: 5, WallMs: ms}}})
}

func build(t *testing.T, l *runLog, meta state.Meta) *Report {
	t.Helper()
	v, err := exec.Replay(l.events)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(Input{Meta: meta, View: v, Events: l.events, Plan: []byte("name: p\n"), Version: "faber test", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func html(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// diamond is a run of a -> (b, c) -> d where c finishes after b, and b
// was retried after a recovery script and a delay.
func diamond(t *testing.T) *runLog {
	l := &runLog{t: t}
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: "p", Jobs: 2, TotalSteps: 4, Steps: []exec.StepInfo{
		{ID: "a", Name: "a", Phase: "main", Needs: []string{}},
		{ID: "b", Name: "b", Phase: "main", Needs: []string{"a"}},
		{ID: "c", Name: "c", Phase: "main", Needs: []string{"a"}},
		{ID: "d", Name: "d", Phase: "main", Needs: []string{"b", "c"}},
	}})
	l.attempt("a", 1, 0, time.Second, 0, exec.StatusSuccess)
	l.attempt("b", 1, time.Second, 2*time.Second, 3, exec.StatusRetrying)
	l.add(2*time.Second, exec.EvRetryReserved, "b", 2, "", nil, &exec.RetryReserved{DelayMs: 1000, FailedAttempt: 1, FailedExitCode: 3, FailureHandler: "flaky", MaxRetries: 2, RetryCount: 1})
	l.add(2500*time.Millisecond, exec.EvRecoveryFinished, "b", 1, "", intp(0), &exec.RecoveryFinished{FailedAttempt: 1})
	l.attempt("b", 2, 3500*time.Millisecond, 4*time.Second, 0, exec.StatusSuccess)
	l.attempt("c", 1, time.Second, 6*time.Second, 0, exec.StatusSuccess)
	l.attempt("d", 1, 6*time.Second, 7*time.Second, 0, exec.StatusSuccess)
	l.add(7*time.Second, exec.EvWorkflowCompleted, "", 0, exec.RunSuccess, nil, &exec.WorkflowEnded{FailedSteps: []string{}, TotalSteps: 4})
	return l
}

func TestCriticalPath(t *testing.T) {
	r := build(t, diamond(t), state.Meta{RunID: "r1"})
	if got := strings.Join(r.CriticalPath, " "); got != "a c d" {
		t.Fatalf("critical path %q, want a c d", got)
	}
	for _, s := range r.Steps {
		if want := s.ID != "b"; s.Critical != want {
			t.Errorf("%s: critical %v", s.ID, s.Critical)
		}
	}
}

func TestTrailAndSpans(t *testing.T) {
	r := build(t, diamond(t), state.Meta{RunID: "r1"})
	b := r.Steps[1]
	want := "attempt 1 exited 3; rule 1 of failure handler 'flaky' retried it (retry 1 of 2) after recovery script (exit 0), then a 1s backoff; attempt 2 succeeded"
	if got := strings.Join(b.Trail, "; "); got != want {
		t.Errorf("trail\n got %s\nwant %s", got, want)
	}
	if len(b.Spans) != 2 || b.Spans[0].Kind != KindRecovery || b.Spans[1].Kind != KindBackoff {
		t.Fatalf("spans %+v", b.Spans)
	}
	if d := b.Spans[1].FinishedAt.Sub(b.Spans[1].StartedAt); d != time.Second {
		t.Errorf("backoff %v, want 1s", d)
	}
	if len(b.Attempts) != 2 || !b.Attempts[1].Retry || *b.Attempts[0].ExitCode != 3 {
		t.Errorf("attempts %+v", b.Attempts)
	}
	if b.DurationMs != 3000 {
		t.Errorf("b took %dms, want 3000", b.DurationMs)
	}
}

func TestLayoutBars(t *testing.T) {
	r := build(t, diamond(t), state.Meta{RunID: "r1"})
	l := LayOut(r)
	if l.Bars != 5 {
		t.Errorf("%d attempt bars, want 5", l.Bars)
	}
	if len(l.Blocks) != 1 || len(l.Blocks[0].Rows) != 4 {
		t.Fatalf("blocks %+v", l.Blocks)
	}
	// a runs the first second of seven: from ChartX, 1/7 of the width
	a := l.Blocks[0].Rows[0].Bars[0]
	if a.X != ChartX || a.W < ChartW/7-1 || a.W > ChartW/7+1 {
		t.Errorf("bar of a at %v width %v", a.X, a.W)
	}
	// d ends at the right edge
	d := l.Blocks[0].Rows[3].Bars[0]
	if end := d.X + d.W; end < ChartX+ChartW-1 || end > ChartX+ChartW+1 {
		t.Errorf("bar of d ends at %v", end)
	}
	for _, row := range l.Blocks[0].Rows {
		for _, b := range row.Bars {
			if b.X < ChartX || b.X+b.W > ChartX+ChartW+minBarW || b.Y < row.Y || b.Y+b.H > row.Y+RowH {
				t.Errorf("%s: bar %+v outside its row", row.Label, b)
			}
		}
	}
	page := html(t, r)
	if n := strings.Count(page, `class="bar attempt`); n != 5 {
		t.Errorf("%d attempt bars in the HTML, want 5", n)
	}
	for _, bad := range []string{"http://", "https://", "<script", "<link", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must load nothing", bad)
		}
	}
	if !strings.Contains(page, "@media print") {
		t.Error("no print stylesheet")
	}
}

func TestHostileValuesEscaped(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	l := &runLog{t: t}
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: evil, Steps: []exec.StepInfo{{ID: evil, Name: evil, Phase: "main", Needs: []string{}}}})
	l.add(0, exec.EvStepStatus, evil, 1, exec.StatusInProgress, nil, &exec.StepStatus{Phase: "main", StartedAt: tp(0)})
	l.add(time.Second, exec.EvStepStatus, evil, 1, exec.StatusFailure, intp(1), &exec.StepStatus{Phase: "main", Error: evil, FinishedAt: tp(time.Second),
		AttemptEnd: &exec.AttemptEnd{Attempt: 1, ExitCode: new(1)}})
	l.add(time.Second, exec.EvHandlerInvoked, evil, 1, "", nil, &exec.HandlerInvoked{HandlerType: "command", HandlerCommand: evil, HandlerResult: &exec.HandlerResult{Status: "failure", ActionTaken: evil}})
	r := build(t, l, state.Meta{RunID: "r1", Sets: map[string]string{evil: evil, "tok": "hunter2"}, Secrets: []string{"hunter2"}})
	r.PlanText = evil
	page := html(t, r)
	if strings.Contains(page, "<script") || strings.Contains(page, `alert("x")`) {
		t.Fatalf("a hostile value reached the page unescaped:\n%s", page)
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Error("the hostile value is not shown escaped")
	}
	if strings.Contains(page, "hunter2") {
		t.Error("the secret is in the page")
	}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "hunter2") {
		t.Error("the secret is in the JSON")
	}
}

func TestLargeFanOutAggregated(t *testing.T) {
	l := &runLog{t: t}
	n := AggregateAbove + 10
	steps := []exec.StepInfo{}
	needs := []string{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("many[%d]", i)
		steps = append(steps, exec.StepInfo{ID: id, Name: id, Phase: "main", Needs: []string{}, FanOut: "many"})
		needs = append(needs, id)
	}
	steps = append(steps, exec.StepInfo{ID: "many", Name: "many", Phase: "main", Needs: needs}, exec.StepInfo{ID: "x", Name: "x", Phase: "main", Needs: []string{}})
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: "p", Steps: steps})
	for i := 0; i < n; i++ {
		l.attempt(fmt.Sprintf("many[%d]", i), 1, time.Duration(i)*time.Millisecond, time.Duration(i+5)*time.Millisecond, 0, exec.StatusSuccess)
	}
	l.attempt("x", 1, 0, time.Millisecond, 0, exec.StatusSuccess)
	r := build(t, l, state.Meta{RunID: "r1"})
	lay := LayOut(r)
	var agg *Block
	for _, b := range lay.Blocks {
		if b.Items != nil {
			agg = b
		}
	}
	if agg == nil || len(agg.Items) != n || len(agg.Rows) != 1 || agg.Rows[0].Bars[0].Class != "bar agg crit" {
		t.Fatalf("no aggregated block of %d items: %+v", n, agg)
	}
	if lay.Bars != 1 {
		t.Errorf("%d attempt bars, want 1 (x's; the items are aggregated)", lay.Bars)
	}
	page := html(t, r)
	if got := strings.Count(page, `class="bar attempt`); got != 1 {
		t.Errorf("%d attempt bars in the page, want 1", got)
	}
	if !strings.Contains(page, fmt.Sprintf("many: %d items (%d success), aggregated: every item", n, n)) {
		t.Error("no table of the items")
	}
}

// tenThousand is the event log of a 10,000-item fan-out's run.
func tenThousand(t testing.TB) [][]byte {
	l := &runLog{t: t}
	const n = 10000
	steps := make([]exec.StepInfo, 0, n+1)
	needs := make([]string, 0, n)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("many[%d]", i)
		steps = append(steps, exec.StepInfo{ID: id, Name: id, Phase: "main", Needs: []string{}, FanOut: "many"})
		needs = append(needs, id)
	}
	steps = append(steps, exec.StepInfo{ID: "many", Name: "many", Phase: "main", Needs: needs})
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: "p", Steps: steps})
	for i := 0; i < n; i++ {
		l.attempt(fmt.Sprintf("many[%d]", i), 1, time.Duration(i)*time.Millisecond, time.Duration(i+3)*time.Millisecond, 0, exec.StatusSuccess)
	}
	return l.events
}

// TestTenThousandSteps: the report of a 10,000-step run is made, its
// fan-out drawn as one aggregated row. How quick it is, is
// BenchmarkTenThousandSteps's to say (README "Run reports"), not a test's:
// these machines are noisy.
func TestTenThousandSteps(t *testing.T) {
	evs := tenThousand(t)
	v, err := exec.Replay(evs)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(Input{Meta: state.Meta{RunID: "r1"}, View: v, Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "many[…] ×10000"); got == 0 {
		t.Errorf("the 10,000 items are not one aggregated row")
	}
}

// BenchmarkTenThousandSteps: building and writing the report of a
// 10,000-step run (the goal: under 2 s).
func BenchmarkTenThousandSteps(b *testing.B) {
	evs := tenThousand(b)
	v, err := exec.Replay(evs)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r, err := Build(Input{Meta: state.Meta{RunID: "r1"}, View: v, Events: evs})
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteHTML(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecisionAndSkipped(t *testing.T) {
	l := &runLog{t: t}
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: "p", Steps: []exec.StepInfo{
		{ID: "odd", Name: "odd", Phase: "main", Needs: []string{}},
		{ID: "maybe", Name: "maybe", Phase: "main", Needs: []string{}},
	}})
	l.attempt("odd", 1, 0, time.Second, 9, exec.StatusPendingFailed)
	l.add(time.Second, exec.EvStepStatus, "maybe", 0, exec.StatusSkipped, nil, &exec.StepStatus{Phase: "main", When: "${{ x }} == y"})
	l.add(5*time.Second, exec.EvStepClassified, "odd", 1, "", nil, &exec.StepClassified{Action: "retry", Reason: "looked at it"})
	l.add(5*time.Second, exec.EvStepStatus, "odd", 1, exec.StatusPending, intp(9), &exec.StepStatus{Phase: "main", Reason: "classified retry"})
	l.attempt("odd", 2, 6*time.Second, 7*time.Second, 0, exec.StatusSuccess)
	r := build(t, l, state.Meta{RunID: "r1"})
	odd, maybe := r.Steps[0], r.Steps[1]
	want := "attempt 1 exited 9; attempt 1 was left pending_failed, awaiting a decision; classified retry (looked at it); attempt 2 succeeded"
	if got := strings.Join(odd.Trail, "; "); got != want {
		t.Errorf("trail\n got %s\nwant %s", got, want)
	}
	if len(odd.Spans) != 1 || odd.Spans[0].Kind != KindDecision || odd.Spans[0].FinishedAt == nil || odd.Spans[0].FinishedAt.Sub(odd.Spans[0].StartedAt) != 4*time.Second {
		t.Errorf("decision span %+v", odd.Spans)
	}
	if maybe.SkippedWhen == "" || len(maybe.Spans) != 1 || maybe.Spans[0].Kind != KindSkipped || len(maybe.Attempts) != 0 {
		t.Errorf("skipped step %+v", maybe)
	}
	page := html(t, r)
	for _, c := range []string{`class="bar decision`, `class="bar skipped`} {
		if !strings.Contains(page, c) {
			t.Errorf("no %s bar", c)
		}
	}
}

func TestLongLabelShortened(t *testing.T) {
	long := strings.Repeat("x", 80)
	l := &runLog{t: t}
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: "p", Steps: []exec.StepInfo{{ID: long, Name: long, Phase: "main", Needs: []string{}}}})
	l.attempt(long, 1, 0, time.Second, 0, exec.StatusSuccess)
	row := LayOut(build(t, l, state.Meta{RunID: "r1"})).Blocks[0].Rows[0]
	if n := len([]rune(row.Label)); n > 34 || !strings.HasSuffix(row.Label, "…") || row.Full != long {
		t.Errorf("label %q (%d), full %q", row.Label, n, row.Full)
	}
}
