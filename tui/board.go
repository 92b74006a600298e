package tui

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/faber-run/faber/exec"
)

// The board is 'faber ui': every active and recent run of every state dir
// faber knows, refreshed once a second, to filter, sort, open, read the
// logs of and stop. It is fed plain rows by its caller (BoardOptions.Load)
// and acts through callbacks: it never opens a store or starts a process.

// BoardRow is one run on the board.
type BoardRow struct {
	Dir      string // the run's state dir
	DirText  string // the state dir as shown (~ for the home directory)
	RunID    string
	Plan     string
	Status   string
	Done     int // steps that ended (succeeded, failed, skipped, ...)
	Total    int // steps of the run; 0: not known
	Started  time.Time
	Finished *time.Time
	// Active is set while a faber process owns the run: it can be stopped
	// and its live view opened.
	Active bool
}

// key names a row across refreshes.
func (r BoardRow) key() string { return r.Dir + "\x00" + r.RunID }

// BoardOptions is what the board shows and how it acts.
type BoardOptions struct {
	Styles Styles
	// Load returns the rows and any warnings (a state dir skipped). It is
	// called off the UI goroutine, once at the start and Refresh after each
	// load.
	Load func() ([]BoardRow, []string)
	// Detail is what enter shows of a run that has ended, as faber status
	// prints it.
	Detail func(BoardRow) string
	// Logs is what l shows: a title and the text of the log of the run's
	// failing step (or its last).
	Logs func(BoardRow) (title, text string)
	// Stop asks the owner of an active run to stop it, as faber stop
	// --no-wait does.
	Stop func(BoardRow) error
	// Recent says which runs the board shows, for the help screen.
	Recent string
	// Refresh is the time between loads (default: a second).
	Refresh time.Duration
	// Now is the clock (default: time.Now).
	Now func() time.Time
}

// Sort orders of the board, in the order s cycles through them.
var boardSorts = []string{"started", "status", "plan", "dir"}

type boardMode int

const (
	modeBoard boardMode = iota
	modeHelp
	modePane
)

// boardKeys are the board's bindings, for the footer, the help screen and
// key handling alike.
type boardKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom Binding
	Filter, Sort, Reverse, Active           Binding
	Open, Logs, Stop, Help, Back, Quit      Binding
}

func defaultBoardKeys() boardKeys {
	return boardKeys{
		Up:       Binding{Keys: []string{"up", "k"}, Help: "↑/k", Desc: "previous run"},
		Down:     Binding{Keys: []string{"down", "j"}, Help: "↓/j", Desc: "next run"},
		PageUp:   Binding{Keys: []string{"pgup", "ctrl+u", "b"}, Help: "pgup", Desc: "page up"},
		PageDown: Binding{Keys: []string{"pgdown", "ctrl+d", " "}, Help: "pgdn", Desc: "page down"},
		Top:      Binding{Keys: []string{"home", "g"}, Help: "g", Desc: "first run"},
		Bottom:   Binding{Keys: []string{"end", "G"}, Help: "G", Desc: "last run"},
		Filter:   Binding{Keys: []string{"/"}, Help: "/", Desc: "filter: run, plan, dir, status (esc clears)"},
		Sort:     Binding{Keys: []string{"s"}, Help: "s", Desc: "sort: started, status, plan, dir"},
		Reverse:  Binding{Keys: []string{"S"}, Help: "S", Desc: "reverse the sort"},
		Active:   Binding{Keys: []string{"a"}, Help: "a", Desc: "active runs only (again: all)"},
		Open:     Binding{Keys: []string{"enter"}, Help: "enter", Desc: "open: the live view of an active run, the status of one that ended"},
		Logs:     Binding{Keys: []string{"l"}, Help: "l", Desc: "logs of the failing (or last) step"},
		Stop:     Binding{Keys: []string{"x"}, Help: "x x", Desc: "stop the active run (press twice), as faber stop"},
		Help:     Binding{Keys: []string{"?"}, Help: "?", Desc: "help"},
		Back:     Binding{Keys: []string{"esc"}, Help: "esc", Desc: "clear the filter; close help or a pane"},
		Quit:     Binding{Keys: []string{"q", "ctrl+c"}, Help: "q", Desc: "quit (runs go on)"},
	}
}

// Board is the model of 'faber ui'.
type Board struct {
	opt  BoardOptions
	keys boardKeys

	rows     []BoardRow // as loaded
	shown    []BoardRow // filtered and sorted
	warnings []string
	loaded   bool

	cursor, offset int
	selected       string // key of the selected row, kept across refreshes
	width, height  int

	filter     string
	filtering  bool // typing the filter
	sortBy     int
	reverse    bool
	activeOnly bool

	mode      boardMode
	paneTitle string
	paneLines []string
	paneTop   int

	confirm string // key of the run a second x stops
	msg     string
	drill   *BoardRow
}

// NewBoard returns the board.
func NewBoard(opt BoardOptions) *Board {
	if opt.Refresh <= 0 {
		opt.Refresh = time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Board{opt: opt, keys: defaultBoardKeys(), width: 80, height: 24}
}

type boardRowsMsg struct {
	rows     []BoardRow
	warnings []string
}

type boardTickMsg struct{}

type boardStoppedMsg struct {
	row BoardRow
	err error
}

type boardPaneMsg struct {
	title, text string
}

func (b *Board) load() tea.Msg {
	rows, warns := b.opt.Load()
	return boardRowsMsg{rows, warns}
}

// Init loads the rows.
func (b *Board) Init() tea.Cmd { return b.load }

// Drilled returns the run whose live view enter asked for, once, and
// clears it (RunBoard returns it).
func (b *Board) Drilled() *BoardRow {
	r := b.drill
	b.drill = nil
	return r
}

// Note shows msg on the board's message line until the next key.
func (b *Board) Note(msg string) { b.msg = msg }

// Update handles a message.
func (b *Board) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		b.width, b.height = msg.Width, msg.Height
		b.clamp()
	case boardRowsMsg:
		b.rows, b.warnings, b.loaded = msg.rows, msg.warnings, true
		b.arrange()
		return b, tea.Tick(b.opt.Refresh, func(time.Time) tea.Msg { return boardTickMsg{} })
	case boardTickMsg:
		return b, b.load
	case boardStoppedMsg:
		if msg.err != nil {
			b.msg = fmt.Sprintf("cannot stop %s: %v", msg.row.RunID, msg.err)
		} else {
			b.msg = fmt.Sprintf("stopping %s (resumable: faber resume %s)", msg.row.RunID, msg.row.RunID)
		}
		return b, b.load
	case boardPaneMsg:
		b.openPane(msg.title, msg.text)
	case tea.KeyMsg:
		return b, b.key(msg)
	}
	return b, nil
}

func (b *Board) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 {
		// Keys typed faster than they are read (or pasted) come as one
		// message: each is a key of its own.
		var cmds []tea.Cmd
		for _, r := range k.Runes {
			cmds = append(cmds, b.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
		}
		return tea.Sequence(cmds...)
	}
	km := b.keys
	if k.String() == "ctrl+c" {
		return tea.Quit
	}
	switch b.mode {
	case modeHelp:
		if km.Help.Matches(k) || km.Back.Matches(k) || km.Quit.Matches(k) {
			b.mode = modeBoard
		}
		return nil
	case modePane:
		return b.paneKey(k)
	}
	if b.filtering {
		switch k.Type {
		case tea.KeyEsc:
			b.filter, b.filtering = "", false
		case tea.KeyEnter:
			b.filtering = false
		case tea.KeyBackspace:
			if r := []rune(b.filter); len(r) > 0 {
				b.filter = string(r[:len(r)-1])
			}
		case tea.KeyRunes, tea.KeySpace:
			b.filter += string(k.Runes)
		}
		b.arrange()
		return nil
	}
	confirm := b.confirm // a pending "x again" lasts one key
	if confirm != "" {
		b.confirm, b.msg = "", ""
	}
	page := max(b.listHeight()-1, 1)
	switch {
	case km.Quit.Matches(k):
		return tea.Quit
	case km.Up.Matches(k):
		b.move(-1)
	case km.Down.Matches(k):
		b.move(1)
	case km.PageUp.Matches(k):
		b.move(-page)
	case km.PageDown.Matches(k):
		b.move(page)
	case km.Top.Matches(k):
		b.move(-len(b.shown))
	case km.Bottom.Matches(k):
		b.move(len(b.shown))
	case km.Filter.Matches(k):
		b.filtering = true
	case km.Back.Matches(k):
		b.filter = ""
		b.arrange()
	case km.Sort.Matches(k):
		b.sortBy = (b.sortBy + 1) % len(boardSorts)
		b.arrange()
	case km.Reverse.Matches(k):
		b.reverse = !b.reverse
		b.arrange()
	case km.Active.Matches(k):
		b.activeOnly = !b.activeOnly
		b.arrange()
	case km.Help.Matches(k):
		b.mode = modeHelp
	case km.Open.Matches(k):
		r, ok := b.current()
		if !ok {
			return nil
		}
		if r.Active {
			b.drill = &r
			return tea.Quit
		}
		if b.opt.Detail != nil {
			return func() tea.Msg { return boardPaneMsg{"run " + r.RunID, b.opt.Detail(r)} }
		}
	case km.Logs.Matches(k):
		r, ok := b.current()
		if ok && b.opt.Logs != nil {
			return func() tea.Msg {
				title, text := b.opt.Logs(r)
				return boardPaneMsg{title, text}
			}
		}
	case km.Stop.Matches(k):
		r, ok := b.current()
		switch {
		case !ok:
		case !r.Active:
			b.msg = fmt.Sprintf("%s is not active (%s): nothing to stop", r.RunID, r.Status)
		case confirm != r.key():
			b.confirm = r.key()
			b.msg = fmt.Sprintf("press x again to stop %s", r.RunID)
		case b.opt.Stop != nil:
			b.msg = fmt.Sprintf("stopping %s…", r.RunID)
			return func() tea.Msg { return boardStoppedMsg{r, b.opt.Stop(r)} }
		}
	}
	return nil
}

func (b *Board) paneKey(k tea.KeyMsg) tea.Cmd {
	km := b.keys
	h := b.paneHeight()
	switch {
	case km.Quit.Matches(k), km.Back.Matches(k):
		b.mode = modeBoard
	case km.Up.Matches(k):
		b.paneTop--
	case km.Down.Matches(k):
		b.paneTop++
	case km.PageUp.Matches(k):
		b.paneTop -= max(h-1, 1)
	case km.PageDown.Matches(k):
		b.paneTop += max(h-1, 1)
	case km.Top.Matches(k):
		b.paneTop = 0
	case km.Bottom.Matches(k):
		b.paneTop = len(b.paneLines)
	}
	b.paneTop = max(min(b.paneTop, len(b.paneLines)-h), 0)
	return nil
}

func (b *Board) openPane(title, text string) {
	b.mode = modePane
	b.paneTitle = title
	b.paneLines = strings.Split(strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n"), "\n")
	b.paneTop = 0
}

func (b *Board) current() (BoardRow, bool) {
	if b.cursor < 0 || b.cursor >= len(b.shown) {
		return BoardRow{}, false
	}
	return b.shown[b.cursor], true
}

func (b *Board) move(n int) {
	b.cursor += n
	b.clamp()
	if r, ok := b.current(); ok {
		b.selected = r.key()
	}
}

// clamp keeps the cursor on a row and in the window.
func (b *Board) clamp() {
	b.cursor = max(min(b.cursor, len(b.shown)-1), 0)
	h := b.listHeight()
	if b.cursor < b.offset {
		b.offset = b.cursor
	}
	if b.cursor >= b.offset+h {
		b.offset = b.cursor - h + 1
	}
	b.offset = max(min(b.offset, len(b.shown)-h), 0)
}

// matches reports whether a row passes the filter: a substring, any case,
// of its run id, plan, dir or status.
func (b *Board) matches(r BoardRow) bool {
	if b.activeOnly && !r.Active {
		return false
	}
	if b.filter == "" {
		return true
	}
	f := strings.ToLower(b.filter)
	for _, s := range []string{r.RunID, r.Plan, r.DirText, r.Dir, r.Status} {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}

// arrange filters and sorts the rows and keeps the selected run selected.
func (b *Board) arrange() {
	b.shown = b.shown[:0]
	for _, r := range b.rows {
		if b.matches(r) {
			b.shown = append(b.shown, r)
		}
	}
	newest := func(x, y BoardRow) int { return y.Started.Compare(x.Started) }
	by := func(f func(BoardRow) string) func(x, y BoardRow) int {
		return func(x, y BoardRow) int {
			if c := strings.Compare(f(x), f(y)); c != 0 {
				return c
			}
			return newest(x, y)
		}
	}
	var cmp func(x, y BoardRow) int
	switch boardSorts[b.sortBy] {
	case "status":
		// active first, then by status word
		cmp = by(func(r BoardRow) string {
			if r.Active {
				return "0" + r.Status
			}
			return "1" + r.Status
		})
	case "plan":
		cmp = by(func(r BoardRow) string { return r.Plan })
	case "dir":
		cmp = by(func(r BoardRow) string { return r.DirText })
	default:
		cmp = newest
	}
	if b.reverse {
		c := cmp
		cmp = func(x, y BoardRow) int { return c(y, x) }
	}
	slices.SortStableFunc(b.shown, cmp)
	if b.selected != "" {
		for i, r := range b.shown {
			if r.key() == b.selected {
				b.cursor = i
				break
			}
		}
	}
	b.clamp()
	if r, ok := b.current(); ok {
		b.selected = r.key()
	}
}

// The screen: a title line, the column heads, the rows, a message line and
// the footer with the keys.
func (b *Board) listHeight() int { return max(b.height-4, 1) }
func (b *Board) paneHeight() int { return max(b.height-2, 1) }

// View draws the screen.
func (b *Board) View() string {
	switch b.mode {
	case modeHelp:
		return b.helpView()
	case modePane:
		return b.paneView()
	}
	s := b.opt.Styles
	var out strings.Builder
	title := fmt.Sprintf("faber ui — %d runs", len(b.shown))
	if len(b.shown) != len(b.rows) {
		title = fmt.Sprintf("faber ui — %d of %d runs", len(b.shown), len(b.rows))
	}
	arrow := "↓"
	if b.reverse {
		arrow = "↑"
	}
	title += " · sort " + boardSorts[b.sortBy] + " " + arrow
	if b.activeOnly {
		title += " · active only"
	}
	if b.filter != "" || b.filtering {
		title += " · /" + b.filter
		if b.filtering {
			title += "▏"
		}
	}
	out.WriteString(s.Render(s.Header, truncate(title, b.width)))
	out.WriteByte('\n')

	now := b.opt.Now()
	cells := make([][]string, len(b.shown))
	for i, r := range b.shown {
		cells[i] = boardCells(r, now)
	}
	heads := []string{"STATUS", "RUN", "PLAN", "DIR", "PROGRESS", "STARTED", "DURATION"}
	// Two columns for the mark of the selected row: › (visible without
	// colour too).
	tw := max(b.width-2, 1)
	widths := fitColumns(heads, cells, tw)
	out.WriteString(s.Render(s.Dim, truncate("  "+joinCells(heads, widths), b.width)))
	out.WriteByte('\n')

	h := b.listHeight()
	lines := 0
	if len(b.shown) == 0 {
		text := "no runs yet"
		switch {
		case !b.loaded:
			text = "reading the runs…"
		case len(b.rows) > 0:
			text = "no run matches (esc clears the filter, a shows all)"
		}
		out.WriteString(truncate(text, b.width))
		out.WriteByte('\n')
		lines++
	}
	for i := b.offset; i < len(b.shown) && i < b.offset+h; i++ {
		line := truncate(joinCells(cells[i], widths), tw)
		mark := "  "
		switch {
		case i == b.cursor:
			mark = s.Render(s.Running, "›") + " "
			line = s.Render(s.Select, padTo(line, tw))
		case widths[0] > 0:
			// colour the status word (the first cell)
			r := b.shown[i]
			word := cells[i][0]
			if strings.HasPrefix(line, word) {
				line = s.Glyph(r.Status) + " " + s.Status(r.Status) + line[len(word):]
			}
		}
		out.WriteString(mark + line)
		out.WriteByte('\n')
		lines++
	}
	for ; lines < h; lines++ {
		out.WriteByte('\n')
	}
	msg := b.msg
	if msg == "" && len(b.warnings) > 0 {
		msg = b.warnings[0]
		if len(b.warnings) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(b.warnings)-1)
		}
	}
	out.WriteString(s.Render(s.Warn, truncate(msg, b.width)))
	out.WriteByte('\n')
	out.WriteString(s.Render(s.Dim, b.footer()))
	return out.String()
}

// footer is the key hints that fit the width; ? and q always do.
func (b *Board) footer() string {
	if b.filtering {
		return truncate("type to filter · enter keep · esc clear", b.width)
	}
	hints := []string{"↑↓ move", "/ filter", "s sort", "a active", "enter open", "l logs", "x x stop"}
	end := "? help · q quit"
	line := ""
	for _, h := range hints {
		next := line + h + " · "
		if lipgloss.Width(next+end) > b.width {
			break
		}
		line = next
	}
	return truncate(line+end, b.width)
}

func (b *Board) helpView() string {
	s := b.opt.Styles
	km := b.keys
	entries := [][2]string{
		{"↑↓ j k", "previous / next run"},
		{"pgup pgdn", "page up / down"},
		{"g G", "first / last run"},
		{km.Filter.Help, km.Filter.Desc},
		{"s S", km.Sort.Desc + " / reverse"},
		{km.Active.Help, km.Active.Desc},
		{km.Open.Help, km.Open.Desc},
		{km.Logs.Help, km.Logs.Desc},
		{km.Stop.Help, km.Stop.Desc},
		{km.Back.Help, km.Back.Desc},
		{km.Quit.Help, km.Quit.Desc},
	}
	lines := make([]string, 0, len(entries)+1)
	for _, e := range entries {
		lines = append(lines, truncate(fmt.Sprintf("  %-10s %s", e[0], e[1]), b.width))
	}
	if b.opt.Recent != "" {
		lines = append(lines, truncate("shown: "+b.opt.Recent, b.width))
	}
	// A title and the footer around the lines; on a terminal too short
	// for them, what does not fit is left out (the footer stays).
	if room := max(b.height-2, 1); len(lines) > room {
		lines = lines[:room]
	}
	var out strings.Builder
	out.WriteString(s.Render(s.Header, "faber ui — keys"))
	out.WriteByte('\n')
	for _, l := range lines {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	out.WriteString(s.Render(s.Dim, truncate("? / esc / q back", b.width)))
	return out.String()
}

func (b *Board) paneView() string {
	s := b.opt.Styles
	var out strings.Builder
	out.WriteString(s.Render(s.Header, truncate(b.paneTitle, b.width)))
	out.WriteByte('\n')
	h := b.paneHeight()
	for i := b.paneTop; i < b.paneTop+h; i++ {
		if i < len(b.paneLines) {
			out.WriteString(truncate(strings.ReplaceAll(b.paneLines[i], "\t", "    "), b.width))
		}
		out.WriteByte('\n')
	}
	pos := ""
	if len(b.paneLines) > h {
		pos = fmt.Sprintf("lines %d-%d of %d · ", b.paneTop+1, min(b.paneTop+h, len(b.paneLines)), len(b.paneLines))
	}
	out.WriteString(s.Render(s.Dim, truncate(pos+"↑↓ scroll · g/G top/end · q/esc back", b.width)))
	return out.String()
}

// boardCells are a row's cells, plain (the status is coloured when drawn).
func boardCells(r BoardRow, now time.Time) []string {
	progress := "-"
	if r.Total > 0 {
		progress = fmt.Sprintf("%d/%d", r.Done, r.Total)
	}
	started := "-"
	if !r.Started.IsZero() {
		l := r.Started.Local()
		if y, m, d := l.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
			started = l.Format("15:04:05")
		} else {
			started = l.Format("Jan 02 15:04")
		}
	}
	dur := "-"
	switch {
	case r.Finished != nil:
		dur = shortDuration(r.Finished.Sub(r.Started))
	case r.Active || r.Status == exec.RunInProgress:
		dur = shortDuration(now.Sub(r.Started))
	}
	return []string{glyphText(r.Status) + " " + r.Status, r.RunID, r.Plan, r.DirText, progress, started, dur}
}

// glyphText is a status's glyph without colour.
func glyphText(status string) string { return NewStyles(false).Glyph(status) }

// shortDuration is a duration in at most two units: 850ms, 42s, 3m05s,
// 2h07m, 3d04h.
func shortDuration(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%02dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}

// fitColumns returns the width of each column so that the table fits in
// width: each as wide as its widest cell; when that is too wide, DIR, PLAN
// and RUN give way (cut with …) down to a minimum, then STARTED, DURATION
// and PROGRESS are left out (width 0), in that order.
func fitColumns(heads []string, cells [][]string, width int) []int {
	w := make([]int, len(heads))
	for i, h := range heads {
		w[i] = lipgloss.Width(h)
	}
	for _, row := range cells {
		for i, c := range row {
			w[i] = max(w[i], lipgloss.Width(c))
		}
	}
	total := func() int {
		t, n := 0, 0
		for _, x := range w {
			if x > 0 {
				t += x
				n++
			}
		}
		return t + 2*max(n-1, 0)
	}
	const (
		colRun, colPlan, colDir, colProgress, colStarted, colDuration = 1, 2, 3, 4, 5, 6
	)
	for _, c := range []struct{ col, min int }{{colDir, 10}, {colPlan, 6}, {colRun, 12}} {
		if over := total() - width; over > 0 {
			w[c.col] = max(w[c.col]-over, min(c.min, w[c.col]))
		}
	}
	for _, col := range []int{colStarted, colDuration, colProgress} {
		if total() > width {
			w[col] = 0
		}
	}
	return w
}

// joinCells lays cells out in columns of widths (a column of width 0 is
// left out), two spaces apart, cutting cells too long.
func joinCells(cells []string, widths []int) string {
	var b strings.Builder
	first := true
	for i, c := range cells {
		if widths[i] == 0 {
			continue
		}
		if !first {
			b.WriteString("  ")
		}
		first = false
		if i == 3 { // DIR: its end says most
			b.WriteString(padTo(cutLeft(c, widths[i]), widths[i]))
		} else {
			b.WriteString(padTo(truncate(c, widths[i]), widths[i]))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// cutLeft shortens s to at most w columns from the left: …/end.
func cutLeft(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	if w <= 0 {
		return ""
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r))+1 > w {
		r = r[1:]
	}
	return "…" + string(r)
}

// padTo pads s with spaces to w columns.
func padTo(s string, w int) string {
	if n := w - lipgloss.Width(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

// RunBoard shows the board on out (the terminal, in the alternate screen)
// with keys from in, until q (nil) or enter on an active run (that run:
// the caller shows its live view, then calls RunBoard again with the same
// board, which keeps its filter, sort and selection).
func RunBoard(b *Board, out io.Writer, in io.Reader) (*BoardRow, error) {
	b.mode = modeBoard
	p := tea.NewProgram(b, tea.WithOutput(out), tea.WithInput(in), tea.WithAltScreen(), tea.WithFPS(fps))
	if _, err := p.Run(); err != nil {
		return nil, err
	}
	return b.Drilled(), nil
}
