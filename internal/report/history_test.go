package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// hist is a run log for history tests: steps a -> b, plus what each test adds.
func hist(t testing.TB, steps ...exec.StepInfo) *runLog {
	l := &runLog{t: t}
	if len(steps) == 0 {
		steps = []exec.StepInfo{{ID: "a", Name: "a", Phase: "main", Needs: []string{}}, {ID: "b", Name: "b", Phase: "main", Needs: []string{"a"}}}
	}
	l.add(0, exec.EvRunStarted, "", 0, "", nil, &exec.RunStarted{Plan: "p", Jobs: 2, TotalSteps: len(steps), Steps: steps})
	return l
}

// try logs one attempt with its resources.
func (l *runLog) try(step string, n int, a, b time.Duration, exit int, cause, status string, res *exec.Resources) {
	l.add(a, exec.EvStepStatus, step, n, exec.StatusInProgress, nil, &exec.StepStatus{Phase: "main", StartedAt: tp(a)})
	ms := int64((b - a) / time.Millisecond)
	if res != nil {
		res.WallMs = ms
	}
	l.add(b, exec.EvStepStatus, step, n, status, intp(exit), &exec.StepStatus{Phase: "main", StartedAt: tp(a), FinishedAt: tp(b), DurationMs: &ms,
		AttemptEnd: &exec.AttemptEnd{Attempt: n, ExitCode: intp(exit), Cause: cause, Resources: res}})
}

func (l *runLog) data() []byte { return append(bytes.Join(l.events, []byte("\n")), '\n') }

func histOf(logs ...*runLog) *History {
	items := make([]run.ListItem, len(logs))
	evs := make([]runEvents, len(logs))
	for i, l := range logs {
		items[i] = run.ListItem{RunID: "r" + string(rune('1'+i)), Status: exec.RunSuccess, StartedAt: t0}
		evs[i] = scanRunLog(l.data())
	}
	return buildHistory("p", 20, items, evs)
}

func step(h *History, id string) *StepHistory {
	for _, s := range h.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func ms(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func mib(n int64) int64 { return n << 20 }

// Durations: min, median (the mean of the middle two for an even count),
// max and one per run, null where the step did not run; failure and retry
// rates over the runs where it ran; flaky: success after a retry.
func TestHistoryRates(t *testing.T) {
	sec := time.Second
	r1 := hist(t)
	r1.try("a", 1, 0, 1*sec, 0, "", exec.StatusSuccess, nil)
	r1.try("b", 1, 1*sec, 2*sec, 0, "", exec.StatusSuccess, nil)
	r2 := hist(t)
	r2.try("a", 1, 0, 3*sec, 0, "", exec.StatusSuccess, nil)
	r2.try("b", 1, 3*sec, 4*sec, 3, "", exec.StatusRetrying, nil)
	r2.try("b", 2, 4*sec, 6*sec, 0, "", exec.StatusSuccess, nil)
	r3 := hist(t)
	r3.try("a", 1, 0, 2*sec, 0, "", exec.StatusSuccess, nil)
	r3.try("b", 1, 2*sec, 3*sec, 1, "", exec.StatusFailure, nil)
	r4 := hist(t)
	r4.try("a", 1, 0, 6*sec, 1, "", exec.StatusFailure, nil)
	r4.add(6*sec, exec.EvStepStatus, "b", 0, exec.StatusCanceled, nil, &exec.StepStatus{Phase: "main"})
	h := histOf(r1, r2, r3, r4)

	a := step(h, "a")
	if a.Ran != 4 || ms(a.MinMs) != 1000 || ms(a.MedianMs) != 2500 || ms(a.MaxMs) != 6000 {
		t.Errorf("a: ran %d, min %d median %d max %d; want 4, 1000 2500 6000", a.Ran, ms(a.MinMs), ms(a.MedianMs), ms(a.MaxMs))
	}
	if a.FailureRate != 0.25 || a.RetryRate != 0 || a.Flaky != 0 {
		t.Errorf("a: failure rate %v retry rate %v flaky %d", a.FailureRate, a.RetryRate, a.Flaky)
	}
	if ms(a.ExpectedMs) != 2000 { // median of the successes 1, 2, 3 s
		t.Errorf("a: expected %d, want 2000", ms(a.ExpectedMs))
	}
	b := step(h, "b")
	if b.Ran != 3 || b.Failed != 1 || b.Retried != 1 || b.Flaky != 1 || b.Succeeded != 2 {
		t.Errorf("b: ran %d failed %d retried %d flaky %d succeeded %d; want 3 1 1 1 2", b.Ran, b.Failed, b.Retried, b.Flaky, b.Succeeded)
	}
	if ms(b.DurationsMs[1]) != 3000 || b.DurationsMs[3] != nil || b.Statuses[3] != exec.StatusCanceled {
		t.Errorf("b: durations %v statuses %v", b.DurationsMs, b.Statuses)
	}
	if ms(b.ExpectedMs) != 2000 { // (1 s + 3 s) / 2
		t.Errorf("b: expected %d, want 2000", ms(b.ExpectedMs))
	}
	if strings.Join(h.Flaky, ",") != "b" {
		t.Errorf("flaky %v, want [b]", h.Flaky)
	}
}

// A fan-out's items fold into it: its duration spans them, its peak is the
// highest, a retry of one item makes it retried.
func TestHistoryFanOut(t *testing.T) {
	sec := time.Second
	steps := []exec.StepInfo{
		{ID: "f[x]", Name: "f[x]", Phase: "main", Needs: []string{}, FanOut: "f"},
		{ID: "f", Name: "f", Phase: "main", Needs: []string{}},
	}
	l := hist(t, steps...)
	l.try("f[x]", 1, 0, 2*sec, 0, "", exec.StatusSuccess, &exec.Resources{PeakRSSBytes: mib(30), MemoryLimitBytes: mib(100)})
	l.try("f[y]", 1, 1*sec, 2*sec, 9, "", exec.StatusRetrying, &exec.Resources{PeakRSSBytes: mib(99), MemoryLimitBytes: mib(100)})
	l.try("f[y]", 2, 2*sec, 5*sec, 0, "", exec.StatusSuccess, &exec.Resources{PeakRSSBytes: mib(40), MemoryLimitBytes: mib(100)})
	l.add(5*sec, exec.EvStepStatus, "f", 1, exec.StatusSuccess, nil, &exec.StepStatus{Phase: "main", StartedAt: tp(5 * sec), FinishedAt: tp(5 * sec)})
	h := histOf(l)
	if len(h.Steps) != 1 {
		t.Fatalf("steps %d, want the fan-out alone", len(h.Steps))
	}
	f := h.Steps[0]
	if f.ID != "f" || ms(f.DurationsMs[0]) != 5000 || f.Retried != 1 || f.Flaky != 1 {
		t.Errorf("f: %s duration %d retried %d flaky %d", f.ID, ms(f.DurationsMs[0]), f.Retried, f.Flaky)
	}
	// peak: of the successful attempts (40 MiB); suggested 48 MiB, and 100 MiB ≥ 2 × 48 MiB
	if f.Memory == nil || ms(f.Memory.Measured) != mib(40) || ms(f.Memory.Suggested) != mib(48) || f.Memory.Verdict != "asks for 2.5× what it uses" {
		t.Errorf("f memory: %+v", f.Memory)
	}
}

// Right-sizing: 1.2 × the peak over the successful runs, rounded up to the
// next MiB or second; "asks for X×" from 2× the suggestion; "too tight"
// after an oom or a timeout; "no data" without a success.
func TestHistoryRightSizing(t *testing.T) {
	sec := time.Second
	r1 := hist(t)
	r1.try("a", 1, 0, 1500*time.Millisecond, 0, "", exec.StatusSuccess, &exec.Resources{PeakRSSBytes: mib(10) + 1, MemoryLimitBytes: mib(200), TimeoutMs: 60000})
	r1.try("b", 1, 2*sec, 3*sec, 137, "oom", exec.StatusFailure, &exec.Resources{PeakRSSBytes: mib(50), MemoryLimitBytes: mib(50), TimeoutMs: 2000})
	r2 := hist(t)
	r2.try("a", 1, 0, 1*sec, 0, "", exec.StatusSuccess, &exec.Resources{PeakRSSBytes: mib(5), MemoryLimitBytes: mib(200), TimeoutMs: 60000})
	r2.try("b", 1, 1*sec, 3*sec, 124, "timeout", exec.StatusFailure, &exec.Resources{PeakRSSBytes: mib(1), MemoryLimitBytes: mib(50), TimeoutMs: 2000})
	h := histOf(r1, r2)
	a := step(h, "a")
	// peak 10 MiB + 1 byte: 1.2× is 12 MiB + 2 bytes, up to 13 MiB
	if a.Memory == nil || ms(a.Memory.Measured) != mib(10)+1 || ms(a.Memory.Suggested) != mib(13) || a.Memory.Verdict != "asks for 20× what it uses" {
		t.Errorf("a memory: %+v %d %d", a.Memory, ms(a.Memory.Measured), ms(a.Memory.Suggested))
	}
	// longest successful attempt 1.5 s: 1.8 s, up to 2 s
	if a.Timeout == nil || a.Timeout.Asked != 60000 || ms(a.Timeout.Measured) != 1500 || ms(a.Timeout.Suggested) != 2000 || a.Timeout.Verdict != "asks for 40× what it uses" {
		t.Errorf("a timeout: %+v", a.Timeout)
	}
	b := step(h, "b")
	if b.Memory == nil || b.Memory.Verdict != "too tight" || b.Memory.Measured != nil {
		t.Errorf("b memory: %+v", b.Memory)
	}
	if b.Timeout == nil || b.Timeout.Verdict != "too tight" {
		t.Errorf("b timeout: %+v", b.Timeout)
	}
	// no success, no oom: no data
	r3 := hist(t)
	r3.try("a", 1, 0, 1*sec, 1, "", exec.StatusFailure, &exec.Resources{PeakRSSBytes: mib(5), MemoryLimitBytes: mib(200)})
	if m := step(histOf(r3), "a").Memory; m == nil || m.Verdict != "no data" || m.Suggested != nil {
		t.Errorf("no success: %+v", m)
	}
	// no limit, request or timeout: no right-sizing
	r4 := hist(t)
	r4.try("a", 1, 0, 1*sec, 0, "", exec.StatusSuccess, &exec.Resources{PeakRSSBytes: mib(5)})
	if s := step(histOf(r4), "a"); s.Memory != nil || s.Timeout != nil {
		t.Errorf("nothing asked: %+v %+v", s.Memory, s.Timeout)
	}
}

func at(d time.Duration) *time.Time { return tp(d) }

// The ETA: the longest path by needs over the unfinished steps, each its
// median less the time it has been running; none when a step has no
// expectation or there were no runs.
func TestETA(t *testing.T) {
	sec := time.Second
	x := Expectation{Runs: 12, Expected: map[string]time.Duration{"a": 10 * sec, "b": 30 * sec, "c": 5 * sec, "d": 20 * sec, "end": sec}}
	steps := []*exec.StepState{
		{ID: "a", Phase: "main", Status: exec.StatusSuccess, StartedAt: at(0)},
		{ID: "b", Phase: "main", Status: exec.StatusInProgress, Needs: []string{"a"}, StartedAt: at(10 * sec)},
		{ID: "c", Phase: "main", Status: exec.StatusPending, Needs: []string{"a"}},
		{ID: "d", Phase: "main", Status: exec.StatusPending, Needs: []string{"c"}},
		{ID: "end", Phase: "", Status: exec.StatusPending},
	}
	now := t0.Add(20 * sec)
	// b: 30 s - 10 s running = 20 s; c + d = 25 s; then end 1 s
	e := x.ETA(steps, now)
	if e.Reason != "" || e.Remaining != 26*sec || e.String() != "~26s (median of 12 past runs)" {
		t.Errorf("ETA %+v %q", e, e.String())
	}
	if j, _ := json.Marshal(e.JSON()); string(j) != `{"seconds":26,"runs":12}` {
		t.Errorf("JSON %s", j)
	}
	// a step running past its median counts 0
	steps[1].StartedAt = at(-100 * sec)
	if e := x.ETA(steps, now); e.Remaining != 26*sec {
		t.Errorf("overdue b: %v, want 26s (c, d, end)", e.Remaining)
	}
	// items fold into their fan-out, which runs from its first item's start
	fan := []*exec.StepState{
		{ID: "f[1]", Phase: "main", Status: exec.StatusSuccess, FanOut: "f", StartedAt: at(0)},
		{ID: "f[2]", Phase: "main", Status: exec.StatusInProgress, FanOut: "f", StartedAt: at(5 * sec)},
		{ID: "f", Phase: "main", Status: exec.StatusPending},
	}
	fx := Expectation{Runs: 3, Expected: map[string]time.Duration{"f": 8 * sec}}
	if e := fx.ETA(fan, t0.Add(6*sec)); e.Remaining != 2*sec {
		t.Errorf("fan-out: %v, want 2s", e.Remaining)
	}
	// no expectation for an unfinished step
	delete(x.Expected, "d")
	if e := x.ETA(steps, now); e.Reason != "step d never succeeded in the last 12 runs" || e.String() != "none (step d never succeeded in the last 12 runs)" {
		t.Errorf("no expectation: %+v", e)
	}
	if j, _ := json.Marshal(x.ETA(steps, now).JSON()); string(j) != `{"reason":"step d never succeeded in the last 12 runs"}` {
		t.Errorf("JSON %s", j)
	}
	// ... but a finished one needs none
	steps[3].Status = exec.StatusSuccess
	if e := x.ETA(steps, now); e.Reason != "" {
		t.Errorf("finished d: %+v", e)
	}
	if e := (Expectation{}).ETA(steps, now); e.Reason != "no finished runs of this plan" {
		t.Errorf("no runs: %+v", e)
	}
}

// LoadHistory reads the runs of one plan from a state dir: events.jsonl
// and summaries, never a store. A thousand runs: see BenchmarkHistoryThousandRuns.
func TestLoadHistory(t *testing.T) {
	dir := t.TempDir()
	writeRuns(t, dir, "p", 5)
	writeRuns(t, dir, "other", 2)
	h, err := LoadHistory(dir, "p", 3, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 3 || h.Runs[2].RunID != "p-4" || h.Runs[0].RunID != "p-2" {
		t.Fatalf("runs %+v", h.Runs)
	}
	if s := step(h, "b"); s == nil || s.Ran != 3 || s.Flaky != 3 {
		t.Errorf("b: %+v", s)
	}
	// up to a run: that run and those before it
	h, _ = LoadHistory(dir, "p", 20, "p-1")
	if len(h.Runs) != 2 || h.Runs[1].RunID != "p-1" {
		t.Errorf("up to p-1: %+v", h.Runs)
	}
	h, _ = LoadHistory(dir, "nosuch", 20, "")
	if len(h.Runs) != 0 {
		t.Errorf("no runs: %+v", h.Runs)
	}
}

// writeRuns writes n finished runs of plan into stateDir the way faber
// leaves them: meta.json, events.jsonl, a store (one empty file: history
// never opens it) and the summary its owner leaves. Each run's step b
// succeeds after a retry.
func writeRuns(tb testing.TB, stateDir, plan string, n int) {
	tb.Helper()
	for i := range n {
		id := fmt.Sprintf("%s-%d", plan, i)
		start := t0.Add(time.Duration(i) * time.Hour)
		l := hist(tb)
		l.try("a", 1, 0, time.Second, 0, "", exec.StatusSuccess, &exec.Resources{PeakRSSBytes: mib(5), MemoryLimitBytes: mib(200)})
		l.try("b", 1, time.Second, 2*time.Second, 3, "", exec.StatusRetrying, nil)
		l.try("b", 2, 2*time.Second, 3*time.Second, 0, "", exec.StatusSuccess, nil)
		l.add(3*time.Second, exec.EvWorkflowCompleted, "", 0, exec.RunSuccess, nil, &exec.WorkflowEnded{FailedSteps: []string{}})
		d := state.RunDir(stateDir, id)
		must(tb, os.MkdirAll(filepath.Join(d, "db"), 0o755))
		meta := state.Meta{RunID: id, Plan: plan, PlanFile: "p.yaml", StartedAt: start, Created: start.UnixNano()}
		mb, err := json.Marshal(meta)
		must(tb, err)
		must(tb, os.WriteFile(filepath.Join(d, "meta.json"), mb, 0o644))
		must(tb, os.WriteFile(filepath.Join(d, "db", "MANIFEST"), nil, 0o644))
		must(tb, os.WriteFile(filepath.Join(d, "events.jsonl"), l.data(), 0o644))
		fin := start.Add(3 * time.Second)
		sum := state.Summary{RunID: id, Plan: plan, StartedAt: start, Created: meta.Created, LastSeq: l.seq,
			Outcome: state.Outcome{Status: exec.RunSuccess, FinishedAt: &fin}}
		for _, name := range []string{"db/MANIFEST", "meta.json"} {
			fi, err := os.Stat(filepath.Join(d, filepath.FromSlash(name)))
			must(tb, err)
			sum.Files = append(sum.Files, state.FileStamp{Name: name, Size: fi.Size(), MTime: fi.ModTime().UnixNano()})
		}
		sb, err := json.Marshal(sum)
		must(tb, err)
		must(tb, os.WriteFile(filepath.Join(d, "summary.json"), sb, 0o644))
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// The history page: self-contained, flaky steps first with "k of n runs",
// one sparkline bar per run where the step ran, right-sizing with its verdict.
func TestHistoryHTML(t *testing.T) {
	dir := t.TempDir()
	writeRuns(t, dir, "p", 4)
	h, err := LoadHistory(dir, "p", 20, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHistoryHTML(&b, h, "faber test", t0); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"<title>faber history: p</title>",
		"<h3>Flaky steps</h3>\n<table><thead><tr><th>step</th><th>succeeded only after a retry</th></tr></thead><tbody><tr><td><code>b</code></td><td>4 of 4 runs</td></tr>",
		`<td>asks for 40× what it uses</td>`,
		`<td class="num">200MiB</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<rect class="spk ok"`); n != 8 {
		t.Errorf("%d sparkline bars, want 8 (2 steps × 4 runs)", n)
	}
	for _, bad := range []string{"<script", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	// the run report's History section
	l := diamond(t)
	r := build(t, l, state.Meta{})
	r.History = h
	if s := html(t, r); !strings.Contains(s, "<h2>History</h2>") || !strings.Contains(s, "4 of 4 runs") {
		t.Error("the run report has no History section")
	}
}

// fastStepStatus reads what encoding/json reads of every step_status line,
// or declines: lines of every kind history sees, and strings that look
// like the keys it looks for.
func TestFastStepStatus(t *testing.T) {
	sec := time.Second
	l := hist(t)
	l.try("a", 1, 0, sec, 0, "", exec.StatusSuccess, &exec.Resources{CPUs: 2, PeakRSSBytes: mib(5), MemoryLimitBytes: mib(200), TimeoutMs: 60000, Source: "cgroup", UserMs: 3, SysMs: 1})
	l.try("b", 1, sec, 2*sec, 137, "oom", exec.StatusRetrying, &exec.Resources{PeakRSSBytes: mib(50), MemoryLimitBytes: mib(50)})
	l.try("b", 2, 2*sec, 3*sec, 124, "timeout", exec.StatusFailure, nil)
	l.try(`f[x "y"]`, 1, 0, sec, 0, "", exec.StatusSuccess, nil) // an escape: declined
	l.add(sec, exec.EvStepStatus, "c", 1, exec.StatusInProgress, nil, &exec.StepStatus{Phase: "main", StartedAt: tp(sec),
		Reserved: &exec.Reserved{CPUs: 2, GPUs: []int{0, 1}, MemoryBytes: mib(64), Pools: []string{"db"}}})
	ms := int64(5)
	l.add(2*sec, exec.EvStepStatus, "c", 1, exec.StatusFailure, intp(1), &exec.StepStatus{Phase: "main", StartedAt: tp(sec), FinishedAt: tp(2 * sec), DurationMs: &ms,
		Error: `"started_at":"2020-01-01T00:00:00Z","duration_ms":9,"attempt_end":{"attempt":7}`, Reason: `}}{"reserved":{"memory_bytes":1}`,
		Outputs:    []exec.Output{{Key: "k", Value: `"finished_at":"x"`}},
		AttemptEnd: &exec.AttemptEnd{Attempt: 1, ExitCode: new(1), Resources: &exec.Resources{PeakRSSBytes: 1}}})
	l.add(3*sec, exec.EvStepStatus, "d", 0, exec.StatusCanceled, nil, &exec.StepStatus{Phase: "main"})
	l.add(3*sec, exec.EvStepStatus, "e", 1, exec.StatusCached, nil, &exec.StepStatus{Phase: "main", CacheKey: "k"})
	read, declined := 0, 0
	for _, line := range l.events {
		if !bytes.Contains(line, []byte(`"type":"step_status"`)) {
			continue
		}
		var want, got hEvent
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		if !fastStepStatus(line, &got) {
			declined++
			continue
		}
		read++
		want.Attempt = 0 // not read: history does not use it
		if r := want.Reserved; r != nil {
			want.Reserved = &exec.Reserved{MemoryBytes: r.MemoryBytes}
		}
		if a := want.AttemptEnd; a != nil && a.Resources != nil {
			r := a.Resources
			a.Resources = &exec.Resources{MemoryLimitBytes: r.MemoryLimitBytes, PeakRSSBytes: r.PeakRSSBytes, TimeoutMs: r.TimeoutMs, WallMs: r.WallMs}
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(wj, gj) {
			t.Errorf("line %s\nfast %s\njson %s", line, gj, wj)
		}
	}
	if declined != 2 || read != 10 {
		t.Errorf("read %d, declined %d; want 10 and 2 (the escaped step id)", read, declined)
	}
}
