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
