package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

var moreBelow = regexp.MustCompile(`↓ \d+ more`)

// TestLayoutUsesTheWholeScreen: at 80x24, 60x20 and 60x15 the view is
// exactly the window's size, no line is wider than it, and while the step
// list overflows ("↓ n more") no row is left empty but the one separator
// under the header; a short list leaves the rest to the log pane.
func TestLayoutUsesTheWholeScreen(t *testing.T) {
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("step-with-a-longish-name-%02d", i))
	}
	for _, n := range []int{30, 3} {
		m, _ := newTestModel(t, defs("build", ids[:n]...)...)
		feed(m, status(ids[1], "in_progress", 1, nil), line(ids[1], "stdout", "hello from the step"))
		key(m, "down")
		for _, sz := range [][2]int{{80, 24}, {60, 20}, {60, 15}} {
			w, h := sz[0], sz[1]
			m.Update(tea.WindowSizeMsg{Width: w, Height: h})
			lines := strings.Split(m.View(), "\n")
			if len(lines) != h {
				t.Errorf("%d steps at %dx%d: %d lines, want %d", n, w, h, len(lines), h)
			}
			overflow := false
			for i, l := range lines {
				if lw := ansi.StringWidth(l); lw > w {
					t.Errorf("%d steps at %dx%d: line %d is %d wide: %q", n, w, h, i+1, lw, l)
				}
				overflow = overflow || moreBelow.MatchString(l)
			}
			if n == 30 && !overflow {
				t.Errorf("30 steps at %dx%d: the list does not say what is below", w, h)
			}
			if !overflow {
				continue
			}
			for i, l := range lines {
				if strings.TrimSpace(ansi.Strip(l)) == "" && i != 2 {
					t.Errorf("%d steps at %dx%d: line %d is empty while the list overflows:\n%s", n, w, h, i+1, strings.Join(lines, "\n"))
					break
				}
			}
			if strings.Contains(m.View(), "in_progress") == false {
				t.Errorf("%d steps at %dx%d: the running step's status is not shown", n, w, h)
			}
		}
	}
}

// TestHelpFitsSmallScreens: every key of the help screen is on a 60x15
// screen, within its width.
func TestHelpFitsSmallScreens(t *testing.T) {
	m, _ := newTestModel(t, defs("main", "a")...)
	key(m, "?")
	for _, sz := range [][2]int{{60, 15}, {80, 24}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		v := m.View()
		for _, b := range m.keys.FullHelp() {
			if !strings.Contains(v, b.Help+" ") {
				t.Errorf("help at %dx%d lacks %q:\n%s", sz[0], sz[1], b.Help, v)
			}
		}
		for i, l := range strings.Split(v, "\n") {
			if lw := ansi.StringWidth(l); lw > sz[0] {
				t.Errorf("help at %dx%d: line %d is %d wide", sz[0], sz[1], i+1, lw)
			}
		}
	}
}
