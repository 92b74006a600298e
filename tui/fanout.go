package tui

import (
	"fmt"
	"strings"
	"time"

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

func (m *Model) addItem(d StepDef) {
	if m.items[d.ID] != nil {
		return
	}
	key := d.ID
	if i := strings.IndexByte(d.ID, '['); i >= 0 && strings.HasSuffix(d.ID, "]") {
		key = d.ID[i+1 : len(d.ID)-1]
	}
	it := &itemState{id: d.ID, key: key, fan: d.FanOut, status: exec.StatusPending}
	m.items[d.ID] = it
	m.itemsOf[d.FanOut] = append(m.itemsOf[d.FanOut], it)
	f := m.fans[d.FanOut]
	if f == nil {
		f = &exec.ItemCounts{}
		m.fans[d.FanOut] = f
	}
	f.Add(exec.StatusPending, 1)
}

// applyExpanded takes the items a fan-out over glob: or lines: read when it
// became ready: new ones are counted, vanished ones no longer.
func (m *Model) applyExpanded(fan string, d *exec.FanOutExpanded) {
	for _, id := range d.Removed {
		if it := m.items[id]; it != nil {
			m.fans[it.fan].Add(it.status, -1)
			delete(m.items, id)
		}
	}
	for _, in := range d.Items {
		m.addItem(StepDef{ID: in.ID, Name: in.Name, Phase: in.Phase, FanOut: fan})
	}
	if m.byID[fan] == nil {
		m.addStep(StepDef{ID: fan})
		m.layoutRows()
	}
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
	m.setItemStatus(it, e.Status)
	d := data[exec.StepStatus](e)
	switch {
	case e.Status == exec.StatusInProgress:
		if t := timeOr(d.StartedAt, e.Time); !t.IsZero() && (r.fanStart.IsZero() || t.Before(r.fanStart)) {
			r.fanStart = t
		}
	case exec.Terminal(e.Status) && e.Time.After(r.fanEnd):
		r.fanEnd = e.Time
	}
	switch {
	case isBad(e.Status) || e.Status == exec.StatusInterrupted || e.Status == exec.StatusPendingFailed:
		r.log.add(logLine{text: fmt.Sprintf("[%s] %s: %s", it.key, e.Status, oneLine(errOf(e.ExitCode, d.Error))), mark: true})
	case e.Status == exec.StatusRetrying:
		r.log.add(logLine{text: fmt.Sprintf("[%s] retrying (attempt %d next)", it.key, e.Attempt), mark: true})
	}
}

// setItemStatus changes an item's status and keeps the counters right.
func (m *Model) setItemStatus(it *itemState, status string) {
	if status == it.status {
		return
	}
	f := m.fans[it.fan]
	f.Add(it.status, -1)
	f.Add(status, 1)
	m.statW = max(m.statW, len(status)) // the fan-out's row shows in_progress
	if it.status == exec.StatusPendingFailed {
		m.pendingItems--
	}
	if status == exec.StatusPendingFailed {
		m.pendingItems++
	}
	it.status = status
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
	if f == nil || f.Total == 0 {
		return ""
	}
	s := m.st
	const bw = 12
	filled := f.Done * bw / f.Total
	bar := s.OK.Render(strings.Repeat("█", filled)) + s.Dim.Render(strings.Repeat("░", bw-filled))
	t := fmt.Sprintf("%s %d/%d", bar, f.Done, f.Total)
	if n := f.Running; n > 0 {
		t += s.Running.Render(fmt.Sprintf(" · %d running", n))
	}
	if n := f.Failed; n > 0 {
		t += s.Error.Render(fmt.Sprintf(" · %d failed", n))
	}
	return t
}

// fanEnded gives a fan-out's row, once its join step ended, the span of
// its items as its duration: the join runs nothing, and its own 0 ms said
// nothing of how long the fan-out took.
func (m *Model) fanEnded(r *stepRow, at time.Time) {
	if m.fans[r.def.ID] == nil || r.fanStart.IsZero() {
		return
	}
	end := r.fanEnd
	if end.IsZero() || end.Before(r.fanStart) {
		end = at
	}
	if d := end.Sub(r.fanStart); d > r.dur || !r.hasDur {
		r.dur, r.hasDur = max(d, 0), true
	}
}

// rowStatus is the status a step's row shows: a fan-out's join step stays
// pending until its items are done, but its row says in_progress while
// they run (or, in a run that goes on, once one has started).
func (m *Model) rowStatus(r *stepRow) string {
	if r.status != exec.StatusPending {
		return r.status
	}
	if f := m.fans[r.def.ID]; f != nil && (f.Running > 0 || m.runStatus == "" && m.interrupts == 0 && f.Pending < f.Total) {
		return exec.StatusInProgress
	}
	return r.status
}
