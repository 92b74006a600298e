package tui

import (
	"strconv"
	"strings"
	"testing"

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
	if row := rowOf(t, v, "a"); !strings.Contains(row, "172MiB") {
		t.Errorf("row a: %q", row)
	}
	if row := rowOf(t, v, "b"); !strings.Contains(row, "64MiB/64MiB oom") {
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
