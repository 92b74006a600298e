package tui

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/faber-run/faber/exec"
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// View draws the screen: header, step list, log pane and footer, exactly
// the window's height, each line at most its width. Only the visible rows
// are drawn, so a plan of thousands of steps costs what a screenful does.
func (m *Model) View() string {
	lines := make([]string, 0, m.height)
	lines = append(lines, m.header()...)
	body := m.height - len(lines) - 1 // the footer takes one line
	switch {
	case m.showHelp:
		lines = append(lines, m.helpLines(body)...)
	case m.showLog:
		lines = append(lines, m.logPane(body)...)
	default:
		listH, logH := m.split(body)
		if body > listH+logH {
			lines = append(lines, "")
		}
		lines = append(lines, m.list(listH)...)
		lines = append(lines, m.logPane(logH)...)
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = append(lines[:m.height-1], m.footer())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(lines, "\n")
}

// split shares the body between the step list and the log pane (whose first
// line is its title), so that no row stays empty while either has more to
// show: a list that fits leaves the rest to the log; a list that does not
// fit leaves the log what its step has printed (its title and at least one
// line, at most two fifths), and takes every other row. One line goes to a
// blank separator when there is room.
func (m *Model) split(body int) (listH, logH int) {
	if body >= 10 {
		body-- // the blank line under the header
	}
	need := len(m.rows)
	if body < 8 {
		return max(body, 0), 0
	}
	if need+4 <= body {
		return need, body - need
	}
	logH = 2 // the title and one line ("(no output)" when there is none)
	if r := m.selected(); r != nil {
		logH = max(logH, 1+r.log.len())
	}
	logH = min(logH, max(body*2/5, 2))
	return body - logH, logH
}

// listHeight is the step list's height in the split view, for paging.
func (m *Model) listHeight() int {
	l, _ := m.split(m.height - 1 - m.headerH())
	return l
}

// logBodyHeight is how many output lines the log pane shows.
func (m *Model) logBodyHeight() int {
	if m.showLog {
		return max(m.height-2-m.headerH(), 1)
	}
	_, l := m.split(m.height - 1 - m.headerH())
	return max(l-1, 1)
}

// scrollTo keeps the selected step visible in the list, with as much of its
// nested child-run lines as fits (down to the last running child step).
func (m *Model) scrollTo() {
	r := m.selected()
	h := m.listHeight()
	n := len(m.rows)
	if r == nil || n <= h || h < 3 {
		m.top = 0
		return
	}
	capa := h - 2 // a line each for "↑ n more" and "↓ n more"
	sr := r.row
	if sr < m.top {
		m.top = sr
		if sr > 0 && m.rows[sr-1].step < 0 { // show the phase title too
			m.top = sr - 1
		}
	}
	last := min(m.nestedFocus(r), sr+capa-1)
	if last >= m.top+capa {
		m.top = last - capa + 1
	}
	m.top = min(max(m.top, 0), n-capa)
}

// nestedFocus is the row of the list under step r that should be in view
// with it: the last running step of its child runs, else its last nested line.
func (m *Model) nestedFocus(r *stepRow) int {
	for i := r.rowEnd; i > r.row; i-- {
		if cs := m.rows[i].cstep; cs != nil && isActive(cs.status) {
			return i
		}
	}
	return r.rowEnd
}

// list draws h lines of the step list around the selection.
func (m *Model) list(h int) []string {
	if h <= 0 {
		return nil
	}
	n := len(m.rows)
	out := make([]string, 0, h)
	if n <= h {
		for i := 0; i < n; i++ {
			out = append(out, m.rowLine(m.rows[i]))
		}
		return out
	}
	if h < 3 {
		r := m.selected()
		start := 0
		if r != nil {
			start = min(r.row, n-h)
		}
		for i := start; i < start+h; i++ {
			out = append(out, m.rowLine(m.rows[i]))
		}
		return out
	}
	capa := h - 2
	var start, end int
	switch {
	case m.top == 0:
		start, end = 0, h-1
	case m.top+capa >= n:
		start, end = n-(h-1), n
	default:
		start, end = m.top, m.top+capa
	}
	if start > 0 {
		out = append(out, m.st.Dim.Render(fmt.Sprintf("  ↑ %d more", start)))
	}
	for i := start; i < end; i++ {
		out = append(out, m.rowLine(m.rows[i]))
	}
	if end < n {
		out = append(out, m.st.Dim.Render(fmt.Sprintf("  ↓ %d more", n-end)))
	}
	return out
}

func (m *Model) rowLine(fr flatRow) string {
	if fr.step < 0 {
		return m.phaseLine(m.phases[fr.phase])
	}
	if fr.run != nil {
		if fr.cstep == nil {
			return m.childRunLine(fr.run, m.steps[fr.step])
		}
		return m.childStepLine(fr.run, fr.cstep)
	}
	r := m.steps[fr.step]
	return m.stepLine(r, r.index == m.sel)
}

func (m *Model) phaseLine(p *phaseRow) string {
	s := m.st
	name := p.name
	if name == "" {
		name = "steps"
	}
	line := s.Header.Render(name) + s.Dim.Render(fmt.Sprintf("  %d/%d", p.done, len(p.steps)))
	if p.bad > 0 {
		line += " " + s.Error.Render(fmt.Sprintf("%d failed", p.bad))
	}
	return line
}

// stepLine is one step: selection mark, glyph (a spinner while running), id,
// status, attempt and retry budget, duration, then what matters most now:
// the handler command, the error, or the newest output line.
func (m *Model) stepLine(r *stepRow, selected bool) string {
	s := m.st
	idW, statW, attempt := m.columns()
	mark := "  "
	if selected {
		mark = s.Running.Render("›") + " "
	}
	id := padRight(truncate(r.def.ID, idW), idW)
	if selected {
		id = s.Select.Render(id)
	}
	var b strings.Builder
	b.WriteString(mark)
	b.WriteString(m.glyph(r))
	b.WriteByte(' ')
	b.WriteString(id)
	b.WriteString("  ")
	if statW > 0 {
		st := m.rowStatus(r)
		b.WriteString(s.StatusStyle(st).Render(padRight(truncate(st, statW), statW)))
		b.WriteByte(' ')
	}
	if attempt {
		b.WriteString(padRight(attemptText(r), m.attW))
		b.WriteByte(' ')
	}
	b.WriteString(padLeft(m.durText(r), 7))
	b.WriteString("  ")
	b.WriteString(m.rest(r, m.width-ansi.StringWidth(b.String())))
	return b.String()
}

// Below these widths a step row gives up room to what follows its columns
// (the error, the newest line, the handler), which a 60- or 80-column
// terminal otherwise pushed off the screen.
const (
	wideView   = 100 // from here: the columns as wide as they can be
	attemptMin = 64  // from here: the attempt column
	statusMin  = 56  // from here: the status word (below, the glyph says it)
	// narrowStatusW is the status column below wideView: in_progress
	// whole, longer words cut ("remediatio…"; the glyph tells them apart).
	narrowStatusW = len(exec.StatusInProgress)
)

// columns are the widths of a step row's id and status columns (status 0:
// the glyph alone) and whether it has an attempt column. A wide window has
// a status column for the longest status there is; a narrower one, for
// the longest shown so far up to narrowStatusW, and an id column of a
// quarter of the width.
func (m *Model) columns() (idW, statW int, attempt bool) {
	w := m.width
	idW = min(m.idW, m.idCap())
	switch {
	case w >= wideView:
		return idW, len(exec.StatusRemediationFailed), true
	case w >= attemptMin:
		return idW, min(m.statW, narrowStatusW), true
	case w >= statusMin:
		return idW, min(m.statW, narrowStatusW), false
	}
	return idW, 0, false
}

// idCap is the most the id column takes of the window's width.
func (m *Model) idCap() int {
	switch w := m.width; {
	case w >= wideView:
		return max(12, w*3/10)
	case w >= statusMin:
		return max(12, w/4)
	default:
		return max(10, w/4)
	}
}

// childIndent is the space before the ↳ of a child run's lines: under the
// id column of the row above.
func childIndent(depth int) string { return strings.Repeat("  ", depth+1) }

// childRunLine is the title of a child run nested under step r: its id,
// its progress and its state.
func (m *Model) childRunLine(cr *childRun, r *stepRow) string {
	s := m.st
	done := 0
	for _, cs := range cr.steps {
		if exec.Terminal(cs.status) {
			done++
		}
	}
	line := childIndent(cr.depth) + s.Dim.Render("↳ child run ") + sanitize([]byte(cr.id)) +
		s.Dim.Render(fmt.Sprintf("  %d/%d", done, len(cr.steps)))
	switch {
	case cr.status != "":
		line += "  " + s.Glyph(cr.status) + " " + s.Status(cr.status)
	case isActive(r.status):
		line += "  " + s.Running.Render(spinnerFrames[m.frame%len(spinnerFrames)]+" running")
	}
	return line
}

// childStepLine is one step of a child run, display-only, in the columns of
// a step row: glyph, id, status, attempt, duration, then error or handler.
func (m *Model) childStepLine(cr *childRun, cs *childStep) string {
	s := m.st
	// The id column ends where the step rows' does, so the status columns
	// line up, unless the child's ids are longer.
	stepIDW, statW, attempt := m.columns()
	idW := max(min(cr.idW, m.idCap()), stepIDW-2*(cr.depth+1))
	var b strings.Builder
	b.WriteString(childIndent(cr.depth))
	b.WriteString(s.Dim.Render("↳"))
	b.WriteByte(' ')
	b.WriteString(m.glyphFor(cs.status))
	b.WriteByte(' ')
	b.WriteString(padRight(truncate(sanitize([]byte(cs.id)), idW), idW))
	b.WriteString("  ")
	att := ""
	if cs.attempt > 0 {
		att = fmt.Sprintf("#%d", cs.attempt)
	}
	if statW > 0 {
		b.WriteString(s.StatusStyle(cs.status).Render(padRight(truncate(cs.status, statW), statW)))
		b.WriteByte(' ')
	}
	if attempt {
		b.WriteString(padRight(att, 3))
		b.WriteByte(' ')
	}
	b.WriteString(padLeft(m.durFor(cs.status, cs.started, cs.dur, cs.hasDur), 7))
	rest := ""
	switch cs.status {
	case exec.StatusFailure, exec.StatusRemediationFailed, exec.StatusPendingFailed:
		rest = s.Error.Render(sanitize([]byte(oneLine(errOf(cs.exit, cs.err)))))
	case exec.StatusRetrying, exec.StatusInterrupted:
		rest = s.Warn.Render(sanitize([]byte(oneLine(errOf(cs.exit, cs.err)))))
	case exec.StatusRemediating:
		rest = s.Warn.Render("on_failure")
		if cs.handler != "" {
			rest += " " + sanitize([]byte(oneLine(cs.handler)))
		}
	default:
		if cs.name != cs.id {
			rest = s.Dim.Render(sanitize([]byte(cs.name)))
		}
	}
	if rest != "" {
		b.WriteString("  ")
		b.WriteString(rest)
	}
	return b.String()
}

func (m *Model) glyph(r *stepRow) string { return m.glyphFor(m.rowStatus(r)) }

// glyphFor is a status glyph; a spinner while running or remediating.
func (m *Model) glyphFor(status string) string {
	frame := spinnerFrames[m.frame%len(spinnerFrames)]
	switch status {
	case exec.StatusInProgress:
		return m.st.Running.Render(frame)
	case exec.StatusRemediating:
		return m.st.Warn.Render(frame)
	}
	return m.st.Glyph(status)
}

// attemptText is "#n", with the retries used of the budget that granted them.
func attemptText(r *stepRow) string {
	if r.attempt == 0 {
		return ""
	}
	t := fmt.Sprintf("#%d", r.attempt)
	if r.budget > 0 {
		t += fmt.Sprintf(" retry %d/%d", r.retries, r.budget)
	}
	return t
}

func (m *Model) durText(r *stepRow) string {
	if st := m.rowStatus(r); st != r.status { // a fan-out whose items run
		return m.durFor(st, r.fanStart, 0, false)
	}
	d, ok := r.shownDur()
	return m.durFor(r.status, r.started, d, ok)
}

// durFor is the live time of an active step, else its recorded duration.
func (m *Model) durFor(status string, started time.Time, dur time.Duration, hasDur bool) string {
	switch {
	case isActive(status) && !started.IsZero():
		d := m.now().Sub(started)
		if d < 0 {
			d = 0
		}
		return fmtDur(d)
	case hasDur:
		return fmtDur(dur)
	}
	return ""
}

// rest is what follows the columns of a row, in w columns: for a finished
// attempt its peak memory first, then the state (restText).
func (m *Model) rest(r *stepRow, w int) string {
	t := m.restText(r, w)
	if w := m.waitText(r); w != "" {
		t = joinText(t, w)
	}
	if mem := memText(r); mem != "" && !isActive(r.status) {
		return joinText(m.st.Dim.Render(mem), t)
	}
	return t
}

func (m *Model) restText(r *stepRow, w int) string {
	s := m.st
	name := ""
	if r.def.Name != r.def.ID {
		name = s.Dim.Render(r.def.Name)
	}
	if ft := m.fanText(r); ft != "" {
		name = ft // a fan-out row: its items' progress
	}

	switch r.status {
	case exec.StatusRemediating:
		h := r.handler
		if h == "" {
			return s.Warn.Render("on_failure handler running")
		}
		return s.Warn.Render("on_failure: ") + h
	case exec.StatusRetrying:
		return joinText(s.Warn.Render("waiting to retry"), s.Dim.Render(oneLine(errText(r))))
	case exec.StatusPendingFailed:
		if r.classified != "" {
			return s.Warn.Render("classified: "+r.classified) + " " + s.Error.Render(oneLine(errText(r)))
		}
		e := oneLine(errText(r))
		ask := " awaiting decision: r retry · x x fail "
		if ansi.StringWidth(ask)+1+min(ansi.StringWidth(e), 20) > w {
			// Narrow: the error first; the footer names the keys when
			// the step is selected.
			return s.Error.Render(e) + "  " + s.Alert.Render(" awaiting decision ")
		}
		return s.Alert.Render(ask) + " " + s.Error.Render(e)
	case exec.StatusAwaitingApproval:
		return joinText(name, s.Alert.Render(" awaiting approval: a approve · x x reject "))
	case exec.StatusFailure, exec.StatusRemediationFailed:
		return s.Error.Render(oneLine(errText(r)))
	case exec.StatusInterrupted:
		return joinText(name, s.Warn.Render(oneLine(r.err)))
	case exec.StatusInProgress:
		if r.lastLine != "" {
			return joinText(name, s.Dim.Render("│ "+r.lastLine))
		}
	}
	return name
}

func errText(r *stepRow) string { return errOf(r.exit, r.err) }

// errOf is a step's error with its exit code.
func errOf(exit *int, e string) string {
	if exit != nil && !strings.HasPrefix(e, "exit status") {
		if e == "" {
			return fmt.Sprintf("exit %d", *exit)
		}
		return fmt.Sprintf("exit %d: %s", *exit, e)
	}
	return e
}

// header is two lines: plan, run id, state and elapsed time; then a
// progress bar and the count of steps per status; and, while the run's
// owner says what it uses of its capacity (usageLine), a third; and when
// the plan or a phase sets a budget (budgetLine), one more.
func (m *Model) header() []string {
	s := m.st
	left := s.Header.Render("faber") + " " + s.Bold.Render(m.opt.Plan) + s.Dim.Render(" · ") + m.opt.RunID
	var state string
	switch {
	case m.runStatus != "":
		state = s.Glyph(m.runStatus) + " " + s.Status(m.runStatus)
	case m.interrupts > 1:
		state = s.Error.Render("killing")
	case m.interrupts == 1:
		state = s.Warn.Render("interrupting")
	case m.waiting():
		state = s.Alert.Render("? waiting for a decision")
	default:
		state = s.Running.Render(spinnerFrames[m.frame%len(spinnerFrames)] + " running")
	}
	total := len(m.steps)
	done := 0
	for _, p := range m.phases {
		done += p.done
	}
	bw := min(max(m.width/6, 10), 30)
	filled := 0
	if total > 0 {
		filled = done * bw / total
	}
	barStyle := s.OK
	if m.counts[exec.StatusFailure]+m.counts[exec.StatusRemediationFailed]+m.counts[exec.StatusPendingFailed] > 0 {
		barStyle = s.Warn
	}
	bar := barStyle.Render(strings.Repeat("█", filled)) + s.Dim.Render(strings.Repeat("░", bw-filled))
	right := bar + fmt.Sprintf(" %d/%d", done, total) + "   " + state + "  " + fmtElapsed(m.elapsed())
	if ansi.StringWidth(left)+ansi.StringWidth(right)+2 > m.width {
		right = fmt.Sprintf("%d/%d", done, total) + "  " + state + "  " + fmtElapsed(m.elapsed())
	}
	line1 := fitLR(left, right, m.width)
	line2 := m.countsText()
	if ansi.StringWidth(line2) > m.width {
		line2 = m.countsShort()
	}
	if eta := m.etaText(); eta != "" && ansi.StringWidth(line2)+3+ansi.StringWidth(eta) <= m.width {
		line2 += "   " + s.Dim.Render(eta)
	}
	lines := []string{line1, line2}
	if u := m.usageLine(); u != "" {
		lines = append(lines, u)
	}
	if b := m.budgetLine(); b != "" {
		lines = append(lines, b)
	}
	return lines
}

// etaText is the run's ETA while it runs (Options.Estimate), asked again
// once a second at most.
func (m *Model) etaText() string {
	if m.opt.Estimate == nil || m.runStatus != "" || m.done {
		return ""
	}
	now := m.now()
	if m.etaAt.IsZero() || now.Sub(m.etaAt) >= time.Second || now.Before(m.etaAt) {
		steps := make([]*exec.StepState, len(m.steps))
		for i, r := range m.steps {
			st := &exec.StepState{ID: r.def.ID, Phase: r.def.Phase, FanOut: r.def.FanOut, Status: r.status}
			if !r.started.IsZero() {
				t := r.started
				st.StartedAt = &t
			}
			steps[i] = st
		}
		m.eta, m.etaAt = m.opt.Estimate(steps, now), now
	}
	return m.eta
}

func (m *Model) elapsed() time.Duration {
	end := m.end
	if end.IsZero() {
		end = m.now()
	}
	if d := end.Sub(m.start); d > 0 {
		return d
	}
	return 0
}

// countGroup is the number of steps in a group of statuses.
type countGroup struct {
	n      int
	status string // the status whose glyph stands for the group
	label  string
}

func (m *Model) countGroups() []countGroup {
	c := m.counts
	return []countGroup{
		{c[exec.StatusSuccess], exec.StatusSuccess, "success"},
		{c[exec.StatusCached], exec.StatusCached, "cached"},
		{c[exec.StatusSkipped], exec.StatusSkipped, "skipped"},
		{c[exec.StatusInProgress] + c[exec.StatusRemediating] + c[exec.StatusRetrying], exec.StatusInProgress, "running"},
		{c[exec.StatusFailure] + c[exec.StatusRemediationFailed], exec.StatusFailure, "failed"},
		{c[exec.StatusPendingFailed], exec.StatusPendingFailed, "pending_failed"},
		{c[exec.StatusAwaitingApproval], exec.StatusAwaitingApproval, "awaiting_approval"},
		{c[exec.StatusInterrupted], exec.StatusInterrupted, "interrupted"},
		{c[exec.StatusCanceled], exec.StatusCanceled, "canceled"},
		{c[exec.StatusPending], exec.StatusPending, "pending"},
	}
}

// countsText lists the non-zero counts of steps per status group.
func (m *Model) countsText() string {
	s := m.st
	groups := m.countGroups()
	var parts []string
	for _, g := range groups {
		if g.n > 0 {
			parts = append(parts, s.Glyph(g.status)+" "+fmt.Sprintf("%d %s", g.n, g.label))
		}
	}
	return strings.Join(parts, "  ")
}

// countsShort is countsText without the words, for narrow windows.
func (m *Model) countsShort() string {
	var parts []string
	for _, g := range m.countGroups() {
		if g.n > 0 {
			parts = append(parts, m.st.Glyph(g.status)+fmt.Sprint(g.n))
		}
	}
	return strings.Join(parts, " ")
}

// logPane draws the selected step's output in h lines: a title, then the
// newest lines (or, in the full-height view, where the reader scrolled to).
func (m *Model) logPane(h int) []string {
	if h <= 0 {
		return nil
	}
	s := m.st
	r := m.selected()
	out := make([]string, 0, h)
	if r == nil {
		return append(out, s.Rule.Render("── no steps"))
	}
	body := h - 1
	n := r.log.len()
	off := 0
	if m.showLog {
		maxOff := max(n-body, 0)
		if m.lv.wrap {
			maxOff = max(n-1, 0)
		}
		off = min(m.logOff, maxOff)
	}
	end := n - off
	// rows are the screen lines of log lines start..end-1, bottom up when
	// wrapping (the newest line is the one to see whole).
	var rows []string
	start := end
	first := r.log.total - n
	for start > 0 && len(rows) < body {
		start--
		l := r.log.at(start)
		rows = append(m.logLineRows(l, first+start == m.lv.cur), rows...)
	}
	if len(rows) > body {
		rows = rows[len(rows)-body:]
	}

	title := "── " + r.def.ID
	if r.attempt > 0 {
		title += fmt.Sprintf(" · attempt %d", r.attempt)
	}
	rs := m.rowStatus(r)
	title += " · " + rs
	if b := m.stepBudget(r); b != "" {
		title += " · " + b
	}
	title += " "
	where := "newest output"
	switch {
	case off > 0:
		where = fmt.Sprintf("lines %d–%d of %d kept, ↓/end to follow", start+1, end, n)
	case isActive(rs):
		where = "following"
	}
	if r.log.total > n {
		where += fmt.Sprintf(" · last %d of %d lines", n, r.log.total)
	}
	where += m.logModes(r)
	out = append(out, s.Rule.Render(fitLR(title, " "+where+" ──", m.width, '─')))
	if n == 0 {
		msg := "(no output)"
		switch {
		case rs == exec.StatusPending:
			msg = "(not started)"
		case isActive(rs):
			msg = "(no output yet)"
		}
		return append(out, s.Dim.Render("  "+msg))
	}
	return append(out, rows...)
}

// logModes is what the log pane's title says of wrap, scroll and search.
func (m *Model) logModes(r *stepRow) string {
	var b strings.Builder
	if m.lv.wrap {
		b.WriteString(" · wrap")
	} else if m.lv.hOff > 0 {
		fmt.Fprintf(&b, " · from column %d", m.lv.hOff+1)
	}
	if m.lv.query != "" {
		at, total := m.matchCount(r)
		switch {
		case total == 0:
			fmt.Fprintf(&b, " · /%s: no match", m.lv.query)
		case at == 0:
			fmt.Fprintf(&b, " · /%s: %d %s", m.lv.query, total, plural(total, "match", "matches"))
		default:
			fmt.Fprintf(&b, " · /%s: %d/%d", m.lv.query, at, total)
		}
	}
	return b.String()
}

// logLineRows draws one log line: its mark, then its text as logRows
// lays it out (the mark repeated on each row of a wrapped line).
func (m *Model) logLineRows(l logLine, current bool) []string {
	s := m.st
	var mark string
	base := s.Stdout
	switch {
	case l.mark:
		mark, base = "  ── ", s.Rule
		mark = s.Rule.Render(mark)
	case l.child:
		mark = s.Dim.Render("↳") + " "
	case l.stderr:
		mark, base = s.Stderr.Render("! "), s.Stderr
	default:
		mark = s.Dim.Render("│") + " "
	}
	rows := m.logRows(l.text, m.width-ansi.StringWidth(mark), base, current)
	for i := range rows {
		rows[i] = mark + rows[i]
	}
	return rows
}

func (m *Model) footer() string {
	s := m.st
	if m.lv.typing {
		return s.Bold.Render("/") + m.lv.input + s.Select.Render(" ") + s.Dim.Render("  enter search · esc cancel")
	}
	if m.msg != "" {
		if m.msgAlert {
			return s.Warn.Render(m.msg)
		}
		return m.msg
	}
	// pre are the keys of a decision (the selected step is pending_failed,
	// or the session waits for one); parts the usual short help.
	var prompt string
	var pre, parts []string
	waiting := m.waiting()
	if waiting {
		ids := append(m.pendingIDs(), m.gateIDs()...)
		what := ids[0] + " waits"
		if len(ids) > 1 {
			what = fmt.Sprintf("%d steps wait", len(ids))
		}
		prompt = s.Alert.Render(what+" for a decision:") + " "
	}
	if len(m.decisionIDs(m.selected())) > 0 {
		pre = append(pre, s.Alert.Render(m.keys.Retry.Help)+" retry", s.Alert.Render(m.keys.Fail.Help)+" fail")
	}
	if r := m.selected(); r != nil && r.status == exec.StatusAwaitingApproval {
		pre = append(pre, s.Alert.Render(m.keys.Approve.Help)+" approve", s.Alert.Render(m.keys.Fail.Help)+" reject")
	}
	help := m.keys.ShortHelp()
	if m.showLog {
		help = m.keys.LogHelp()
	}
	for _, b := range help {
		if b.Desc == "log" && m.showLog {
			b.Desc = "back"
		}
		if b.Desc == "track" && m.track {
			b.Desc = "track (on)"
		}
		if b.Desc == "leave" && waiting {
			// q leaves the decision for later, not the view.
			parts = append(parts, s.Alert.Render(b.Help)+" later")
			continue
		}
		parts = append(parts, s.Bold.Render(b.Help)+" "+s.Dim.Render(b.Desc))
	}
	width := func() int {
		return ansi.StringWidth(prompt + strings.Join(append(append([]string{}, pre...), parts...), " · "))
	}
	// Narrow: drop hints from the middle (log, track, ...) before the
	// ones a person needs to get out: help, leave, interrupt; then the
	// words of the prompt before its keys.
	for len(pre)+len(parts) > 4 && len(parts) > 3 && width() > m.width {
		parts = append(parts[:len(parts)-4], parts[len(parts)-3:]...)
	}
	if width() > m.width {
		prompt = ""
	}
	// Narrower still (a 40-column pane): only the ways out, help, leave
	// and interrupt, rather than cutting them off with "…".
	for width() > m.width && len(parts) > 3 {
		parts = parts[1:]
	}
	parts = append(pre, parts...)
	return prompt + strings.Join(parts, s.Dim.Render(" · "))
}

func (m *Model) helpLines(h int) []string {
	s := m.st
	keys := m.keys.FullHelp()
	if len(keys)+2 > h {
		// Small screen: the keys alone, in as many columns as they need.
		return m.compactHelp(keys, h)
	}
	out := []string{"", s.Header.Render("keys")}
	for _, b := range keys {
		out = append(out, "  "+s.Bold.Render(padRight(b.Help, 10))+" "+b.Desc)
	}
	out = append(out, "", s.Header.Render("statuses"))
	for _, status := range exec.AllStatuses() {
		st := string(status)
		g := s.Glyph(st)
		switch st {
		case exec.StatusInProgress:
			g = s.Running.Render(spinnerFrames[0])
		case exec.StatusRemediating:
			g = s.Warn.Render(spinnerFrames[0])
		}
		out = append(out, "  "+g+" "+s.Status(st))
	}
	out = append(out, "", s.Dim.Render("  #n is the attempt; \"retry k/m\" the retries used of the budget that granted them."),
		s.Dim.Render("  Every line is also in the log files: faber logs "+m.opt.RunID+" STEP"))
	if len(out) > h {
		out = out[:max(h, 0)]
	}
	return out
}

// compactHelp lays the keys out in columns so that all of them fit h lines
// (a 60x15 terminal): short descriptions, the first clause of each.
func (m *Model) compactHelp(keys []Binding, h int) []string {
	s := m.st
	out := []string{s.Header.Render("keys") + s.Dim.Render(" (esc closes)")}
	rows := max(h-1, 1)
	cols := (len(keys) + rows - 1) / rows
	rows = (len(keys) + cols - 1) / cols
	colW := max(m.width/cols, 12)
	for r := 0; r < rows; r++ {
		var line strings.Builder
		for c := 0; c < cols; c++ {
			i := c*rows + r
			if i >= len(keys) {
				break
			}
			desc, _, _ := strings.Cut(keys[i].Desc, " (")
			cell := " " + s.Bold.Render(padRight(keys[i].Help, 7)) + " " + desc
			line.WriteString(padRight(truncate(cell, colW-1), colW))
		}
		out = append(out, strings.TrimRight(line.String(), " "))
	}
	return out
}

// fitLR puts left and right on one line of width w, filled between.
func fitLR(left, right string, w int, fill ...rune) string {
	f := " "
	if len(fill) > 0 {
		f = string(fill[0])
	}
	lw, rw := ansi.StringWidth(left), ansi.StringWidth(right)
	if lw+rw+1 > w {
		left = ansi.Truncate(left, max(w-rw-1, 0), "…")
		lw = ansi.StringWidth(left)
	}
	return left + strings.Repeat(f, max(w-lw-rw, 1)) + right
}

func padRight(s string, w int) string {
	if d := w - ansi.StringWidth(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}

func padLeft(s string, w int) string {
	if d := w - ansi.StringWidth(s); d > 0 {
		return strings.Repeat(" ", d) + s
	}
	return s
}

func truncate(s string, w int) string { return ansi.Truncate(s, w, "…") }

// fmtElapsed is the run's elapsed time in the header: faber's one human
// form of a duration (exec.FormatDuration).
func fmtElapsed(d time.Duration) string { return fmtDur(d) }

// sanitize makes a line of a step's output safe to draw: valid UTF-8, no
// escape sequences (colours, cursor moves), no control characters, tabs as
// spaces.
func sanitize(b []byte) string {
	clean := utf8.Valid(b)
	if clean {
		for _, c := range b {
			if c < 0x20 || c == 0x7f || c == 0xc2 {
				clean = false
				break
			}
		}
	}
	s := string(b)
	if clean {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\t", "    ")
	if strings.ContainsRune(s, 0x1b) || strings.ContainsRune(s, 0x9b) {
		s = ansi.Strip(s)
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, s)
}

// memText is a finished attempt's peak memory for its row: "164MiB", with
// the limit when one was set ("164MiB/256MiB") and "oom" when that ended it.
func memText(r *stepRow) string {
	if r.peak <= 0 {
		return ""
	}
	t := exec.FormatSize(r.peak)
	if r.peakBound {
		t = "≤" + t // wait4's figure counts faber's pages (README "Resources")
	}
	if r.limit > 0 {
		t += "/" + exec.FormatSize(r.limit)
	}
	if r.cause != "" {
		t += " " + r.cause
	}
	return t
}

// joinText puts two parts of a row's text side by side, either may be empty.
func joinText(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "  " + b
}
