package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/faber-run/faber/exec"
)

// summaryRows is how many steps the final table lists in full; past it only
// the steps that did not succeed are listed.
const summaryRows = 40

// Summary is what stays on the normal screen once the live view is gone: the
// outcome, a table of steps (status, attempts, duration), the failed steps
// with their errors, and how to go on. It is empty when no event came.
func (m *Model) Summary() string {
	if m.events == 0 {
		return "" // the run never started: main says why
	}
	s := m.st
	w := max(m.width, 60)
	var b strings.Builder

	status := m.runStatus
	if status == "" {
		status = "stopped"
		if m.interrupts > 0 {
			status = exec.RunInterrupted
		}
	}
	fmt.Fprintf(&b, "%s %s %s %s %s in %s\n", s.Glyph(status), s.Header.Render("faber"), s.Bold.Render(m.opt.Plan),
		m.opt.RunID, s.Status(status), fmtDur(m.elapsed()))

	rows := m.steps
	hidden := 0
	if len(rows) > summaryRows {
		rows = nil
		for _, r := range m.steps {
			if exec.Succeeded(r.status) || len(rows) >= summaryRows {
				hidden++
				continue
			}
			rows = append(rows, r)
		}
	}
	if len(rows) > 0 {
		idW, phW := len("STEP"), len("PHASE")
		for _, r := range rows {
			idW = max(idW, min(ansi.StringWidth(r.def.ID), 40))
			phW = max(phW, min(ansi.StringWidth(r.def.Phase), 20))
		}
		stW := len(exec.StatusRemediationFailed)
		b.WriteString("\n")
		b.WriteString(s.Dim.Render("  " + padRight("STEP", idW+2) + "  " + padRight("PHASE", phW) + "  " +
			padRight("STATUS", stW) + "  ATTEMPTS  DURATION"))
		b.WriteString("\n")
		for _, r := range rows {
			dur := ""
			if d, ok := r.shownDur(); ok {
				dur = fmtDur(d)
			}
			att := ""
			if r.attempt > 0 {
				att = fmt.Sprint(r.attempt)
			}
			st := m.rowStatus(r)
			fmt.Fprintf(&b, "  %s %s  %s  %s  %s  %s\n", s.Glyph(st), padRight(truncate(r.def.ID, 40), idW),
				padRight(truncate(r.def.Phase, 20), phW), s.StatusStyle(st).Render(padRight(st, stW)),
				padRight(att, 8), dur)
		}
		if hidden > 0 {
			fmt.Fprintf(&b, "  %s\n", s.Dim.Render(fmt.Sprintf("… and %d more steps (succeeded, or past the first %d); faber status %s lists them all", hidden, summaryRows, m.opt.RunID)))
		}
	}
	if len(rows) == 0 && hidden > 0 {
		fmt.Fprintf(&b, "\n  %s\n", s.Dim.Render(fmt.Sprintf("all %d steps succeeded; faber status %s lists them", hidden, m.opt.RunID)))
	}
	b.WriteString("\n  " + m.countsText() + "\n")

	var failed, pending []*stepRow
	for _, r := range m.steps {
		switch st := exec.Status(r.status); {
		case st == exec.StatusPendingFailed:
			pending = append(pending, r)
		case st.Failed():
			failed = append(failed, r)
		}
	}
	if len(failed)+len(pending) > 0 {
		b.WriteString("\n" + s.Error.Render("failed steps:") + "\n")
		for _, r := range append(failed, pending...) {
			line := fmt.Sprintf("  %s %s %s: %s", s.Glyph(r.status), s.Bold.Render(r.def.ID), s.Status(r.status), oneLine(errText(r)))
			b.WriteString(ansi.Truncate(line, w, "…") + "\n")
			m.childFailures(&b, r.runs, w)
		}
	}
	if m.dropped > 0 {
		fmt.Fprintf(&b, "\n  %s\n", s.Dim.Render(fmt.Sprintf("%d output lines were not shown live; faber logs has them all", m.dropped)))
	}
	var hints []string
	if h := m.logHint(failed); h != "" {
		hints = append(hints, h)
	}
	if h := ClassifyHint(m.opt.RunID, m.pendingIDs()); h != "" {
		hints = append(hints, h)
	}
	if ids := m.gateIDs(); len(ids) > 0 {
		hints = append(hints, ApproveHint(m.opt.RunID, ids[0]))
	}
	if m.opt.ResumeHint && status != exec.RunSuccess {
		hints = append(hints, "resume with: faber resume "+m.opt.RunID)
	}
	if len(hints) > 0 {
		b.WriteString("\n")
		for _, h := range hints {
			b.WriteString(h + "\n")
		}
	}
	return b.String()
}

// logHint names the log of the first failed step: down into its child runs
// for a sub-plan step, its first failed item for a fan-out (whose join step
// runs nothing and has no log). "" when none has a log to show.
func (m *Model) logHint(failed []*stepRow) string {
	for _, r := range failed {
		if cr, cs := deepestFailure(r.runs); cs != nil {
			return LogHint(cr.id, cs.id)
		}
		if its := m.itemsOf[r.def.ID]; len(its) > 0 {
			for _, it := range its {
				if isBad(it.status) {
					return LogHint(m.opt.RunID, it.id)
				}
			}
			continue // no item failed (canceled, interrupted): no log tells why
		}
		return LogHint(m.opt.RunID, r.def.ID)
	}
	return ""
}

// pendingIDs are the steps and items that wait for a decision, in plan
// order.
func (m *Model) pendingIDs() []string {
	var ids []string
	for _, r := range m.steps {
		if r.status == exec.StatusPendingFailed {
			ids = append(ids, r.def.ID)
		}
		if m.pendingItems > 0 {
			for _, it := range m.itemsOf[r.def.ID] {
				if it.status == exec.StatusPendingFailed {
					ids = append(ids, it.id)
				}
			}
		}
	}
	return ids
}

// gateIDs are the steps that wait at an approval gate, in plan order.
func (m *Model) gateIDs() []string {
	var ids []string
	for _, r := range m.steps {
		if r.status == exec.StatusAwaitingApproval {
			ids = append(ids, r.def.ID)
		}
	}
	return ids
}

// childFailures lists, under a failed sub-plan step, the steps of its child
// runs (and theirs) that did not succeed.
func (m *Model) childFailures(b *strings.Builder, runs []*childRun, w int) {
	s := m.st
	for _, cr := range runs {
		for _, cs := range cr.steps {
			if !isBad(cs.status) && cs.status != exec.StatusPendingFailed {
				continue
			}
			line := fmt.Sprintf("%s%s %s %s %s: %s", childIndent(cr.depth), s.Dim.Render("↳ "+sanitize([]byte(cr.id))), s.Glyph(cs.status),
				s.Bold.Render(sanitize([]byte(cs.id))), s.Status(cs.status), sanitize([]byte(oneLine(errOf(cs.exit, cs.err)))))
			b.WriteString(ansi.Truncate(line, w, "…") + "\n")
			m.childFailures(b, cs.runs, w)
		}
	}
}

// deepestFailure is the first failed step of the child runs, followed down
// into its own child runs: the step whose logs tell what went wrong.
func deepestFailure(runs []*childRun) (*childRun, *childStep) {
	for _, cr := range runs {
		for _, cs := range cr.steps {
			if !isBad(cs.status) {
				continue
			}
			if dr, ds := deepestFailure(cs.runs); ds != nil {
				return dr, ds
			}
			return cr, cs
		}
	}
	return nil, nil
}
