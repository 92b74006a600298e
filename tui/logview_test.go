package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/faber-run/faber/exec"
)

// typeKeys sends each rune of s as a key.
func typeKeys(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

// logLinesOf are the log lines of a view (after their "│ " mark).
func logLinesOf(v string) []string {
	var out []string
	for _, l := range strings.Split(v, "\n") {
		if rest, ok := strings.CutPrefix(l, "│ "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// TestLogWrapAndScroll: a line longer than the window is cut with "…"; w
// wraps it over as many rows as it needs, each within the width; ←/→ and
// h/l scroll sideways when not wrapping.
func TestLogWrapAndScroll(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "long")...)
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 20})
	long := ""
	for i := 0; i < 20; i++ {
		long += fmt.Sprintf("w%02d-abcdef ", i) // 11 columns each
	}
	feed(m, status("long", exec.StatusInProgress, 1, nil), line("long", "stdout", long), line("long", "stdout", "short"))
	key(m, "enter")
	ls := logLinesOf(m.View())
	if len(ls) != 2 || !strings.HasPrefix(ls[0], "w00-abcdef") || !strings.HasSuffix(ls[0], "…") {
		t.Fatalf("long line not cut with …: %q", ls)
	}

	key(m, "l")
	v := m.View()
	ls = logLinesOf(v)
	if !strings.HasPrefix(ls[0], "…") || strings.Contains(ls[0], "w00") || !strings.Contains(ls[0], "w05") {
		t.Errorf("l did not scroll right by half the width: %q", ls[0])
	}
	if !strings.Contains(v, "from column 31") {
		t.Errorf("title does not say where the view starts:\n%s", v)
	}
	for i := 0; i < 10; i++ {
		m.Update(tea.KeyMsg{Type: tea.KeyRight})
	}
	ls = logLinesOf(m.View())
	if !strings.Contains(ls[0], "w19-abcdef") || strings.HasSuffix(ls[0], "…") {
		t.Errorf("→ does not stop at the end of the longest line: %q", ls[0])
	}
	for i := 0; i < 5; i++ {
		m.Update(tea.KeyMsg{Type: tea.KeyLeft})
		key(m, "h")
	}
	if ls = logLinesOf(m.View()); !strings.HasPrefix(ls[0], "w00") {
		t.Errorf("←/h did not scroll back to the start: %q", ls[0])
	}

	key(m, "w")
	v = m.View()
	checkSize(t, v, 60, 20)
	ls = logLinesOf(v)
	if got := strings.Join(ls, ""); got != long+"short" {
		t.Errorf("wrapped rows do not hold the whole line:\n%q", ls)
	}
	if len(ls) != 5 || !strings.Contains(v, "· wrap") {
		t.Errorf("want 4 rows of 58 columns and a short line, and the title saying wrap:\n%s", v)
	}
	key(m, "w")
	if ls = logLinesOf(m.View()); len(ls) != 2 {
		t.Errorf("w again did not stop wrapping: %q", ls)
	}
	// In the split view too.
	key(m, "enter")
	key(m, "w")
	if ls = logLinesOf(m.View()); len(ls) < 3 || ls[0] != long[:58] {
		t.Errorf("w does not wrap the split view's log pane: %q", ls)
	}
}

// TestLogSearch: / opens the full-height log and searches back from the
// newest line; n/N go to the next/previous matching line, wrapping around;
// matches are highlighted; esc clears the search, then closes the log.
func TestLogSearch(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "s")...)
	m.st = NewStyles(true)
	var evs []exec.Event
	evs = append(evs, status("s", exec.StatusInProgress, 1, nil))
	for i := 1; i <= 200; i++ {
		text := fmt.Sprintf("line %d", i)
		if i%50 == 0 {
			text += " ERROR disk full"
		}
		evs = append(evs, line("s", "stdout", text))
	}
	feed(m, evs...)
	key(m, "/")
	typeKeys(m, "error")
	if f := ansi.Strip(m.View()); !strings.Contains(f, "/error") || !strings.Contains(f, "enter search") {
		t.Fatalf("footer does not show the query being typed:\n%s", f)
	}
	key(m, "enter")
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "/error: 4/4") || !strings.Contains(v, "│ line 200 ERROR disk full") {
		t.Fatalf("search did not find the newest match (smart case):\n%s", v)
	}
	for _, want := range []string{"3/4", "2/4", "1/4", "4/4"} {
		key(m, "N")
		v = ansi.Strip(m.View())
		if !strings.Contains(v, "/error: "+want) {
			t.Errorf("N: want match %s:\n%s", want, v)
		}
	}
	key(m, "N")
	key(m, "n")
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "/error: 4/4") || !strings.Contains(v, "│ line 200 ERROR") {
		t.Errorf("n did not go to the next match:\n%s", v)
	}
	key(m, "N")
	key(m, "N") // match 2: line 100
	v = m.View()
	if !strings.Contains(ansi.Strip(v), "│ line 100 ERROR") {
		t.Fatalf("match 2 is not in view:\n%s", ansi.Strip(v))
	}
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(ansi.Strip(l), "line 100 ERROR") && !strings.Contains(l, "\x1b[") {
			t.Errorf("the match is not highlighted: %q", l)
		}
	}
	// A capital letter makes the search case-sensitive.
	key(m, "/")
	typeKeys(m, "Error")
	key(m, "enter")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "/Error: no match") {
		t.Errorf("Error matched ERROR:\n%s", v)
	}
	key(m, "esc")
	v = ansi.Strip(m.View())
	if strings.Contains(v, "/Error") || !strings.Contains(v, "── s · attempt 1") || strings.Contains(v, "main  0/1") {
		t.Errorf("esc did not clear the search and keep the log open:\n%s", v)
	}
	key(m, "esc")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "main  0/1") {
		t.Errorf("second esc did not close the log:\n%s", v)
	}
	// Typing q into a search does not leave the view.
	key(m, "/")
	if cmd := key(m, "q"); cmd != nil || m.detached {
		t.Errorf("q while typing a search left the view")
	}
	key(m, "esc")
	if m.lv.typing || m.lv.query != "" {
		t.Errorf("esc did not cancel typing")
	}
}

// TestLogKeysInFooterAndHelp: the full-height log's footer names its keys,
// and the help lists every one; "follow" is the log's tail only, f is
// "track".
func TestLogKeysInFooterAndHelp(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a")...)
	feed(m, status("a", exec.StatusInProgress, 1, nil), line("a", "stdout", "x"))
	v := m.View()
	foot := v[strings.LastIndex(v, "\n")+1:]
	if !strings.Contains(foot, "f track (on)") || strings.Contains(foot, "follow") {
		t.Errorf("split footer: %q", foot)
	}
	key(m, "enter")
	v = m.View()
	foot = v[strings.LastIndex(v, "\n")+1:]
	for _, want := range []string{"enter back", "w wrap", "←/→ scroll", "/ search", "n/N match", "q leave"} {
		if !strings.Contains(foot, want) {
			t.Errorf("log footer lacks %q: %q", want, foot)
		}
	}
	key(m, "?")
	v = m.View()
	for _, want := range []string{"wrap long lines", "scroll left", "scroll right", "search", "next match", "previous match", "track the running step"} {
		if !strings.Contains(v, want) {
			t.Errorf("help lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "follow running step") {
		t.Errorf("help still says f follows:\n%s", v)
	}
}
