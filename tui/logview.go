package tui

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// The log views (the live view's log pane and its full-height log, in
// faber run and faber attach) read as less and k9s do: w wraps long lines,
// ←/→ (h/l) scroll sideways when not wrapping, / searches (type, enter),
// n/N go to the next/previous match, matches are highlighted, esc clears.

// logView is the state of the log views: it stays when another step is
// selected, so a search goes on in the next step's log.
type logView struct {
	wrap   bool
	hOff   int    // columns scrolled right (when not wrapping)
	typing bool   // / was pressed: keys go to the query
	input  string // the query being typed
	query  string // the search in force ("" none)
	cur    int    // the current match: a line number counted from the step's first line ever (-1 none)
}

// logKey handles the keys of the log views; it reports whether k was one.
func (m *Model) logKey(k tea.KeyMsg) bool {
	km := m.keys
	lv := &m.lv
	switch {
	case km.Wrap.Matches(k):
		lv.wrap = !lv.wrap
		lv.hOff = 0
	case km.Left.Matches(k):
		if !lv.wrap {
			lv.hOff = max(lv.hOff-m.hStep(), 0)
		}
	case km.Right.Matches(k):
		if !lv.wrap {
			lv.hOff = min(lv.hOff+m.hStep(), m.maxHOff())
		}
	case km.Search.Matches(k):
		lv.typing, lv.input = true, ""
	case km.Next.Matches(k), km.Prev.Matches(k):
		if lv.query == "" {
			m.say("no search: / and a word to search the log", false)
			return true
		}
		m.showLog = true
		m.findMatch(km.Next.Matches(k))
	default:
		return false
	}
	return true
}

// searchKey takes a key while the query is typed.
func (m *Model) searchKey(k tea.KeyMsg) {
	lv := &m.lv
	switch k.Type {
	case tea.KeyEnter:
		lv.typing = false
		lv.query, lv.cur = lv.input, -1
		if lv.query == "" {
			return
		}
		m.showLog = true
		// From the newest line back, as the log is read from its end.
		m.findMatch(false)
	case tea.KeyEsc:
		lv.typing, lv.input = false, ""
	case tea.KeyBackspace:
		if lv.input != "" {
			_, n := utf8.DecodeLastRuneInString(lv.input)
			lv.input = lv.input[:len(lv.input)-n]
		}
	case tea.KeyRunes, tea.KeySpace:
		lv.input += string(k.Runes)
	}
}

// clearSearch ends a search (esc); it reports whether there was one.
func (m *Model) clearSearch() bool {
	if m.lv.query == "" {
		return false
	}
	m.lv.query, m.lv.cur = "", -1
	return true
}

// hStep is how far ←/→ scroll: half the width, as less does.
func (m *Model) hStep() int { return max(m.width/2, 8) }

// maxHOff lets the longest line kept of the selected step scroll until its
// end is in view.
func (m *Model) maxHOff() int {
	r := m.selected()
	if r == nil {
		return 0
	}
	w := 0
	for i := 0; i < r.log.len(); i++ {
		w = max(w, ansi.StringWidth(r.log.at(i).text))
	}
	return max(w-(m.width-logPrefixW), 0)
}

// logPrefixW is the width of the mark before each log line ("│ ", "! ").
const logPrefixW = 2

// matcher finds the query in a line: case-insensitive when the query has no
// capital letter (smart case, as in less -i and vim).
func (lv *logView) matcher() func(s string) [][2]int {
	q := lv.query
	if q == "" {
		return nil
	}
	fold := strings.IndexFunc(q, unicode.IsUpper) < 0
	return func(s string) [][2]int {
		hay := s
		if fold {
			if l := strings.ToLower(s); len(l) == len(s) {
				hay = l
			}
		}
		var out [][2]int
		for i := 0; i <= len(hay)-len(q); {
			j := strings.Index(hay[i:], q)
			if j < 0 {
				break
			}
			out = append(out, [2]int{i + j, i + j + len(q)})
			i += j + len(q)
		}
		return out
	}
}

// findMatch moves to the next (forward: newer) or previous matching line
// of the selected step's log, from the current match (none: from the end
// of what is shown), wrapping around, and scrolls it into view.
func (m *Model) findMatch(forward bool) {
	r := m.selected()
	match := m.lv.matcher()
	if r == nil || match == nil {
		return
	}
	n := r.log.len()
	first := r.log.total - n // line number of r.log.at(0)
	from := m.lv.cur - first
	if m.lv.cur < 0 || from < 0 || from >= n {
		from = n // before the newest line when going back
		if forward {
			from = -1
		}
	}
	for k := 1; k <= n; k++ {
		i := from - k
		if forward {
			i = from + k
		}
		i = ((i % n) + n) % n
		if match(r.log.at(i).text) != nil {
			m.lv.cur = first + i
			m.showLine(i)
			return
		}
	}
	m.lv.cur = -1
	m.say(fmt.Sprintf("%q: not found in %s's log", m.lv.query, r.def.ID), false)
}

// showLine scrolls the full-height log so that line i is in view (the
// bottom line when wrapping, where the lines above it may take more rows).
func (m *Model) showLine(i int) {
	r := m.selected()
	n, body := r.log.len(), m.logBodyHeight()
	if m.lv.wrap {
		m.logOff = n - 1 - i
		return
	}
	// one line above it for context, as less leaves none but a pane this
	// small reads better with one
	m.logOff = min(max(n-(i-1)-body, 0), max(n-body, 0))
}

// matchCount is how many lines kept of the step match, and which of them
// is the current one (0: none).
func (m *Model) matchCount(r *stepRow) (at, total int) {
	match := m.lv.matcher()
	if match == nil {
		return 0, 0
	}
	first := r.log.total - r.log.len()
	for i := 0; i < r.log.len(); i++ {
		if match(r.log.at(i).text) != nil {
			total++
			if first+i == m.lv.cur {
				at = total
			}
		}
	}
	return at, total
}

// logRows draws one log line as screen rows of width w after its mark:
// wrapped, or cut at the horizontal scroll; matches highlighted (the
// current match's line more strongly).
func (m *Model) logRows(text string, w int, base lipgloss.Style, current bool) []string {
	var spans [][2]int
	lead := ""
	switch {
	case m.lv.wrap:
		spans = wrapSpans(text, max(w, 1))
	case m.lv.hOff > 0:
		// "…" says there is more on the left; one column more than fits
		// on the right, so that the view's cut puts "…" there too.
		lead = m.st.Render(m.st.Dim, "…")
		spans = [][2]int{colSpan(text, m.lv.hOff+1, m.lv.hOff+w+1)}
	default:
		spans = [][2]int{colSpan(text, 0, w+1)}
	}
	var hits [][2]int
	if match := m.lv.matcher(); match != nil {
		hits = match(text)
	}
	out := make([]string, 0, len(spans))
	for _, sp := range spans {
		out = append(out, lead+m.highlight(text, sp, hits, base, current))
	}
	return out
}

// highlight renders text[sp[0]:sp[1]] with the parts of hits in it marked.
func (m *Model) highlight(text string, sp [2]int, hits [][2]int, base lipgloss.Style, current bool) string {
	st := m.st.Select
	if current {
		st = m.st.Alert
	}
	var b strings.Builder
	at := sp[0]
	for _, h := range hits {
		a, e := max(h[0], sp[0]), min(h[1], sp[1])
		if a >= e {
			continue
		}
		b.WriteString(m.st.Render(base, text[at:a]))
		b.WriteString(m.st.Render(st, text[a:e]))
		at = e
	}
	if at < sp[1] {
		b.WriteString(m.st.Render(base, text[at:sp[1]]))
	}
	return b.String()
}

// runeW is the display width of one rune (0 for a combining mark).
func runeW(r rune) int {
	if r < 0x80 {
		return 1
	}
	return ansi.StringWidth(string(r))
}

// colSpan is the byte range of s that covers display columns [from, to).
func colSpan(s string, from, to int) [2]int {
	a, e := len(s), len(s)
	col := 0
	for i, r := range s {
		if col >= from && a == len(s) {
			a = i
		}
		col += runeW(r)
		if col > to {
			e = i
			break
		}
	}
	return [2]int{min(a, e), e}
}

// wrapSpans cuts s into byte ranges of at most w display columns each.
func wrapSpans(s string, w int) [][2]int {
	var out [][2]int
	start, col := 0, 0
	for i, r := range s {
		rw := runeW(r)
		if col+rw > w && i > start {
			out = append(out, [2]int{start, i})
			start, col = i, 0
		}
		col += rw
	}
	return append(out, [2]int{start, len(s)})
}
