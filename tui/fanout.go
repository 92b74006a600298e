package tui

import (
	"fmt"
	"strings"

	"github.com/faber-run/faber/exec"
)

// Fan-out in the live view: item steps <id>[<key>] are not rows (a fan-out
// may have 10,000 of them); the row of their fan-out step shows a progress
// bar with counts, and its log pane their output lines and failures.

// itemState is one item step as the view knows it.
type itemState struct {
	id, key, fan string
	status       string
}

// fanState counts the items of one fan-out by status.
type fanState struct {
	total  int
	counts map[string]int
}

func (f *fanState) done() int { return f.counts[exec.StatusSuccess] + f.counts[exec.StatusCached] }

func (f *fanState) failed() int {
	n := 0
	for st, c := range f.counts {
		if isBad(st) || st == exec.StatusCanceled || st == exec.StatusInterrupted {
			n += c
		}
	}
	return n
}

func (f *fanState) running() int {
	return f.counts[exec.StatusInProgress] + f.counts[exec.StatusRemediating] + f.counts[exec.StatusRetrying]
}

func (m *Model) addItem(d StepDef) {
	if m.items[d.ID] != nil {
		return
	}
	key := d.ID
	if i := strings.IndexByte(d.ID, '['); i >= 0 && strings.HasSuffix(d.ID, "]") {
		key = d.ID[i+1 : len(d.ID)-1]
	}
	m.items[d.ID] = &itemState{id: d.ID, key: key, fan: d.FanOut, status: exec.StatusPending}
	f := m.fans[d.FanOut]
	if f == nil {
		f = &fanState{counts: map[string]int{}}
		m.fans[d.FanOut] = f
	}
	f.total++
	f.counts[exec.StatusPending]++
}

// fanRow is the row of an item's fan-out step (added when the plan did not
// name it).
func (m *Model) fanRow(it *itemState) *stepRow {
	if r := m.byID[it.fan]; r != nil {
		return r
	}
	r := m.addStep(StepDef{ID: it.fan})
	m.layoutRows()
	return r
}

func (m *Model) applyItemStatus(it *itemState, e exec.Event) {
	r := m.fanRow(it)
	f := m.fans[it.fan]
	if e.Status != it.status {
		f.counts[it.status]--
		f.counts[e.Status]++
		it.status = e.Status
	}
	d := data[exec.StepStatus](e)
	switch {
	case isBad(e.Status) || e.Status == exec.StatusInterrupted:
		r.log.add(logLine{text: fmt.Sprintf("[%s] %s: %s", it.key, e.Status, oneLine(errOf(e.ExitCode, d.Error))), mark: true})
	case e.Status == exec.StatusRetrying:
		r.log.add(logLine{text: fmt.Sprintf("[%s] retrying (attempt %d next)", it.key, e.Attempt), mark: true})
	}
}

func (m *Model) applyItemLine(it *itemState, e exec.Event) {
	r := m.fanRow(it)
	text := "[" + it.key + "] " + sanitize(e.Line)
	stderr := data[exec.StepOutput](e).Stream == "stderr"
	r.log.add(logLine{text: text, stderr: stderr})
	if strings.TrimSpace(text) != "" {
		r.lastLine = text
	}
	if m.showLog && m.logOff > 0 && m.sel == r.index {
		m.scrollLog(1)
	}
}

// fanText is the progress of a fan-out for its row: a bar and counts.
func (m *Model) fanText(r *stepRow) string {
	f := m.fans[r.def.ID]
	if f == nil || f.total == 0 {
		return ""
	}
	s := m.st
	const bw = 12
	filled := f.done() * bw / f.total
	bar := s.OK.Render(strings.Repeat("█", filled)) + s.Dim.Render(strings.Repeat("░", bw-filled))
	t := fmt.Sprintf("%s %d/%d", bar, f.done(), f.total)
	if n := f.running(); n > 0 {
		t += s.Running.Render(fmt.Sprintf(" · %d running", n))
	}
	if n := f.failed(); n > 0 {
		t += s.Error.Render(fmt.Sprintf(" · %d failed", n))
	}
	return t
}
