package tui

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
)

// TestFanOutRow: the items of a fan-out are not rows; their fan-out step's
// row shows a bar with counts, and its log the items' lines and failures.
func TestFanOutRow(t *testing.T) {
	defs := []StepDef{}
	for i := 1; i <= 1000; i++ {
		defs = append(defs, StepDef{ID: "work[" + strconv.Itoa(i) + "]", Phase: "main", FanOut: "work"})
	}
	defs = append(defs, StepDef{ID: "work", Phase: "main"}, StepDef{ID: "after", Phase: "main"})
	m, _ := newTestModel(t, defs...)
	for i := 1; i <= 600; i++ {
		feed(m, status("work["+strconv.Itoa(i)+"]", exec.StatusSuccess, 1, nil))
	}
	feed(m, status("work[601]", exec.StatusFailure, 1, map[string]any{"error": "bad row"}),
		status("work[602]", exec.StatusInProgress, 1, nil),
		line("work[602]", "stdout", "halfway"))
	v := m.View()
	if strings.Contains(v, "work[1]") || strings.Contains(v, "work[999]") {
		t.Errorf("item rows shown:\n%s", v)
	}
	row := rowOf(t, v, "work")
	for _, want := range []string{"600/1000", "1 running", "1 failed"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}
	var logText []string
	lg := &m.byID["work"].log
	for i := range lg.len() {
		logText = append(logText, lg.at(i).text)
	}
	all := strings.Join(logText, "\n")
	if !strings.Contains(all, "[601] failure: bad row") || !strings.Contains(all, "[602] halfway") {
		t.Errorf("log of the fan-out row:\n%s", all)
	}
}

// TestRowPeakMemory: a finished step's row shows its attempt's peak memory,
// with its limit and an oom cause.
func TestRowPeakMemory(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a", "b")...)
	feed(m, status("a", exec.StatusSuccess, 1, map[string]any{"attempt_end": map[string]any{"attempt": 1, "exit_code": 0,
		"resources": map[string]any{"peak_rss_bytes": 172 << 20, "source": "rusage"}}}),
		status("b", exec.StatusFailure, 1, map[string]any{"error": "Killed", "attempt_end": map[string]any{"attempt": 1, "exit_code": 137, "cause": "oom",
			"resources": map[string]any{"peak_rss_bytes": 64 << 20, "memory_limit_bytes": 64 << 20, "source": "cgroup"}}}))
	v := m.View()
	// rusage's peak is an upper bound (it counts faber's pages), a
	// cgroup's the attempt's own (issue 34)
	if row := rowOf(t, v, "a"); !strings.Contains(row, "≤172MiB") {
		t.Errorf("row a: %q", row)
	}
	if row := rowOf(t, v, "b"); !strings.Contains(row, "64MiB/64MiB oom") || strings.Contains(row, "≤") {
		t.Errorf("row b: %q", row)
	}
}

// TestFanOutExpanded: the items of a fan-out over glob: or lines: come with
// its fanout_expanded event; the row counts them, and a later expansion
// drops the items it removed.
func TestFanOutExpanded(t *testing.T) {
	m, _ := newTestModel(t, StepDef{ID: "work", Phase: "main"}, StepDef{ID: "after", Phase: "main"})
	infos := func(keys ...string) []exec.StepInfo {
		var out []exec.StepInfo
		for _, k := range keys {
			out = append(out, exec.StepInfo{ID: "work[" + k + "]", Name: "work[" + k + "]", Phase: "main", FanOut: "work"})
		}
		return out
	}
	feed(m, exec.Event{Type: exec.EvFanOutExpanded, StepID: "work", Time: t0, Data: &exec.FanOutExpanded{Count: 3, Items: infos("a", "b", "c")}},
		status("work[a]", exec.StatusSuccess, 1, nil))
	if row := rowOf(t, m.View(), "work"); !strings.Contains(row, "1/3") {
		t.Errorf("row after the first expansion: %q", row)
	}
	feed(m, exec.Event{Type: exec.EvFanOutExpanded, StepID: "work", Time: t0, Data: &exec.FanOutExpanded{
		Count: 2, Items: infos("a", "c"), Removed: []string{"work[b]"}}})
	v := m.View()
	if row := rowOf(t, v, "work"); !strings.Contains(row, "1/2") {
		t.Errorf("row after b was removed: %q", row)
	}
	if strings.Contains(v, "work[") {
		t.Errorf("item rows shown:\n%s", v)
	}
}

// TestFanOutRowProgressAndSpan: while its items run, a fan-out's row (and
// its log pane's title) says in_progress with its items' counts and the
// time since its first item started, though its join step is pending;
// once the join ended, the row, the summary and the plain line show the
// span of its items, not the join's own 0 ms.
func TestFanOutRowProgressAndSpan(t *testing.T) {
	defs := []StepDef{{ID: "work[a]", Phase: "main", FanOut: "work"}, {ID: "work[b]", Phase: "main", FanOut: "work"},
		{ID: "work", Phase: "main"}}
	m, c := newTestModel(t, defs...)
	at := func(e exec.Event, d time.Duration) exec.Event { e.Time = t0.Add(d); return e }
	evs := []exec.Event{
		at(status("work[a]", exec.StatusInProgress, 1, nil), 0),
		at(status("work[a]", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(1500)}), 1500*time.Millisecond),
		at(status("work[b]", exec.StatusInProgress, 1, nil), 1500*time.Millisecond),
	}
	feed(m, evs...)
	c.t = t0.Add(2 * time.Second)
	v := m.View()
	row := rowOf(t, v, "work")
	for _, want := range []string{"in_progress", "1/2", "1 running", "2.0s"} {
		if !strings.Contains(row, want) {
			t.Errorf("running fan-out row %q lacks %q", row, want)
		}
	}
	if !strings.Contains(v, "── work · in_progress") {
		t.Errorf("log pane title of the fan-out:\n%s", v)
	}
	end := []exec.Event{
		at(status("work[b]", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(2000)}), 3500*time.Millisecond),
		at(status("work", exec.StatusSuccess, 1, map[string]any{"duration_ms": int64(0)}), 3500*time.Millisecond),
	}
	feed(m, end...)
	if row := rowOf(t, m.View(), "work"); !strings.Contains(row, "success") || !strings.Contains(row, "3.5s") {
		t.Errorf("finished fan-out row %q lacks success and the span 3.5s", row)
	}
	if sum := m.Summary(); !regexp.MustCompile(`(?m)^  ✓ work +main +success +1 +3\.5s$`).MatchString(sum) {
		t.Errorf("summary does not show the span:\n%s", sum)
	}

	var out strings.Builder
	p := NewPlain(&out, NewStyles(false), false)
	for _, e := range append(evs, end...) {
		p.Event(e)
	}
	p.Close()
	if !strings.Contains(out.String(), "✓ work success 3.5s\n") || !strings.Contains(out.String(), "✓ work[a] success 1.5s\n") {
		t.Errorf("plain lines:\n%s", out.String())
	}
	if l := PlainLine(end[1], NewStyles(false)); !strings.HasSuffix(l, "✓ work success 0ms") {
		t.Errorf("PlainLine of the join alone (faber events) says what the event holds: %q", l)
	}
}
