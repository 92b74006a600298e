package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

var boardNow = time.Date(2026, 3, 4, 12, 0, 0, 0, time.Local)

func boardRows() []BoardRow {
	fin := boardNow.Add(-50 * time.Minute)
	return []BoardRow{
		{Dir: "/home/u/a/.faber", DirText: "~/a/.faber", RunID: "etl-20260304T110000-aaaa", Plan: "etl", Status: "success", Done: 3, Total: 3, Started: boardNow.Add(-time.Hour), Finished: &fin},
		{Dir: "/home/u/b/.faber", DirText: "~/b/.faber", RunID: "train-20260304T115000-bbbb", Plan: "train", Status: "in_progress", Done: 1, Total: 4, Started: boardNow.Add(-10 * time.Minute), Active: true},
		{Dir: "/home/u/b/.faber", DirText: "~/b/.faber", RunID: "report-20260303T090000-cccc", Plan: "report", Status: "failed", Done: 2, Total: 2, Started: boardNow.Add(-27 * time.Hour), Finished: &fin},
	}
}

type boardHarness struct {
	t       *testing.T
	b       *Board
	stopped []string
}

func newBoardHarness(t *testing.T, w, h int) *boardHarness {
	bh := &boardHarness{t: t}
	bh.b = NewBoard(BoardOptions{
		Styles: NewStyles(false),
		Load:   func() ([]BoardRow, []string) { return boardRows(), nil },
		Detail: func(r BoardRow) string { return "detail of " + r.RunID },
		Logs:   func(r BoardRow) (string, string) { return "log " + r.RunID, "line 1\nline 2" },
		Stop: func(r BoardRow) error {
			bh.stopped = append(bh.stopped, r.RunID)
			return nil
		},
		Now: func() time.Time { return boardNow },
	})
	bh.send(tea.WindowSizeMsg{Width: w, Height: h})
	bh.send(bh.b.Init()())
	return bh
}

// send delivers msg and runs the commands it returns that answer at once
// (not ticks).
func (bh *boardHarness) send(msg tea.Msg) tea.Cmd {
	_, cmd := bh.b.Update(msg)
	if _, tick := msg.(boardRowsMsg); tick {
		return nil // the next load is a tick away
	}
	if cmd != nil {
		if m := cmd(); m != nil {
			if _, quit := m.(tea.QuitMsg); quit {
				return cmd
			}
			bh.send(m)
		}
	}
	return cmd
}

func (bh *boardHarness) keys(ks ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range ks {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		last = bh.send(msg)
	}
	return last
}

func (bh *boardHarness) view() string { return bh.b.View() }

func TestBoardRowsAndSort(t *testing.T) {
	bh := newBoardHarness(t, 120, 20)
	v := bh.view()
	for _, want := range []string{"STATUS", "RUN", "PLAN", "DIR", "PROGRESS", "STARTED", "DURATION",
		"▶ in_progress", "1/4", "~/b/.faber", "10m00s", "✓ success", "3/3", "Mar 03 09:00", "? help · q quit"} {
		if !strings.Contains(v, want) {
			t.Errorf("board lacks %q:\n%s", want, v)
		}
	}
	order := func() []string {
		var ids []string
		for _, r := range bh.b.shown {
			ids = append(ids, r.Plan)
		}
		return ids
	}
	if got := strings.Join(order(), ","); got != "train,etl,report" {
		t.Errorf("newest first: %s", got)
	}
	bh.keys("s") // status: active first
	if got := strings.Join(order(), ","); got != "train,report,etl" {
		t.Errorf("by status: %s", got)
	}
	bh.keys("s") // plan
	if got := strings.Join(order(), ","); got != "etl,report,train" {
		t.Errorf("by plan: %s", got)
	}
	bh.keys("S")
	if got := strings.Join(order(), ","); got != "train,report,etl" {
		t.Errorf("by plan reversed: %s", got)
	}
	if !strings.Contains(bh.view(), "sort plan ↑") {
		t.Errorf("title does not say the sort:\n%s", bh.view())
	}
	bh.keys("a")
	if got := strings.Join(order(), ","); got != "train" {
		t.Errorf("active only: %s", got)
	}
}

func TestBoardFilterKeepsSelection(t *testing.T) {
	bh := newBoardHarness(t, 100, 20)
	bh.keys("down") // etl
	bh.keys("/", "r", "e", "p")
	if v := bh.view(); !strings.Contains(v, "/rep▏") || !strings.Contains(v, "1 of 3 runs") {
		t.Errorf("filtering: %s", v)
	}
	bh.keys("enter") // keep the filter
	bh.keys("esc")   // clear it
	if len(bh.b.shown) != 3 {
		t.Fatalf("esc did not clear the filter: %d rows", len(bh.b.shown))
	}
	if r, _ := bh.b.current(); r.Plan != "report" {
		t.Errorf("the selection did not stay on the run selected while filtered: %s", r.Plan)
	}
	// the filter matches the dir and the status too
	bh.keys("/", "a", "/", "enter")
	if len(bh.b.shown) != 1 || bh.b.shown[0].Plan != "etl" {
		t.Errorf("filter on dir: %+v", bh.b.shown)
	}
	bh.keys("esc", "/", "F", "A", "I", "L", "enter")
	if len(bh.b.shown) != 1 || bh.b.shown[0].Plan != "report" {
		t.Errorf("filter on status, any case: %+v", bh.b.shown)
	}
}

func TestBoardOpenLogsStop(t *testing.T) {
	bh := newBoardHarness(t, 100, 20)
	// enter on an active run quits the program with it as the drill
	if cmd := bh.keys("enter"); cmd == nil {
		t.Fatal("enter on an active run did not end the program")
	}
	if r := bh.b.Drilled(); r == nil || r.Plan != "train" {
		t.Fatalf("Drilled = %+v", r)
	}
	if bh.b.Drilled() != nil {
		t.Error("Drilled twice")
	}
	// enter on a run that ended: its detail in a pane; q comes back
	bh.keys("down", "enter")
	if v := bh.view(); !strings.Contains(v, "detail of etl-") || !strings.Contains(v, "q/esc back") {
		t.Fatalf("detail pane:\n%s", v)
	}
	bh.keys("q")
	if v := bh.view(); !strings.Contains(v, "PROGRESS") {
		t.Fatalf("q did not come back to the board:\n%s", v)
	}
	bh.keys("l")
	if v := bh.view(); !strings.Contains(v, "log etl-") || !strings.Contains(v, "line 2") {
		t.Fatalf("logs pane:\n%s", v)
	}
	bh.keys("esc")
	// x on a run that ended: nothing to stop
	bh.keys("x")
	if v := bh.view(); !strings.Contains(v, "is not active") {
		t.Errorf("x on an ended run:\n%s", v)
	}
	// x x on the active run stops it; x then another key does not
	bh.keys("g", "x", "j", "k", "x")
	if len(bh.stopped) != 0 {
		t.Fatalf("stopped without a second x: %v", bh.stopped)
	}
	if v := bh.view(); !strings.Contains(v, "press x again to stop train-") {
		t.Errorf("no confirm prompt:\n%s", v)
	}
	bh.keys("x")
	if len(bh.stopped) != 1 || !strings.HasPrefix(bh.stopped[0], "train-") {
		t.Fatalf("x x stopped %v", bh.stopped)
	}
	if v := bh.view(); !strings.Contains(v, "stopping train-") {
		t.Errorf("no stopping message:\n%s", v)
	}
	bh.keys("?")
	if v := bh.view(); !strings.Contains(v, "x x") || !strings.Contains(v, "/ reverse") {
		t.Errorf("help:\n%s", v)
	}
	bh.keys("?")
	if cmd := bh.keys("q"); cmd == nil {
		t.Error("q does not quit")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q does not quit")
	}
}

func TestBoardStopError(t *testing.T) {
	bh := newBoardHarness(t, 100, 20)
	bh.b.opt.Stop = func(BoardRow) error { return errors.New("refused") }
	bh.keys("x", "x")
	if v := bh.view(); !strings.Contains(v, "cannot stop train-") || !strings.Contains(v, "refused") {
		t.Errorf("stop error not shown:\n%s", v)
	}
}

// TestBoardSmall: at 60×15 every line fits, the rows and the footer's ?
// and q show, and the run ids stay readable.
func TestBoardSmall(t *testing.T) {
	bh := newBoardHarness(t, 60, 15)
	v := bh.view()
	lines := strings.Split(v, "\n")
	if len(lines) != 15 {
		t.Errorf("%d lines for a 15-line terminal:\n%s", len(lines), v)
	}
	for _, l := range lines {
		if w := lipgloss.Width(l); w > 60 {
			t.Errorf("line of %d columns: %q", w, l)
		}
	}
	for _, want := range []string{"▶ in_progress", "train-2026", "? help · q quit", "DIR", "PROGRESS", "1/4"} {
		if !strings.Contains(v, want) {
			t.Errorf("60×15 lacks %q:\n%s", want, v)
		}
	}
	// the help screen fits too, every key on it
	bh.keys("?")
	v = bh.view()
	if n := len(strings.Split(v, "\n")); n > 15 {
		t.Errorf("help of %d lines at 60×15:\n%s", n, v)
	}
	for _, want := range []string{"faber ui — keys", "x x", "enter", "? / esc / q back"} {
		if !strings.Contains(v, want) {
			t.Errorf("help at 60×15 lacks %q:\n%s", want, v)
		}
	}
}

func TestBoardColumnsGiveWay(t *testing.T) {
	heads := []string{"STATUS", "RUN", "PLAN", "DIR", "PROGRESS", "STARTED", "DURATION"}
	cells := [][]string{boardCells(boardRows()[1], boardNow)}
	for _, w := range []int{200, 100, 80, 60, 40} {
		widths := fitColumns(heads, cells, w)
		line := joinCells(cells[0], widths)
		if lipgloss.Width(line) > w && w >= 60 {
			t.Errorf("width %d: %q is %d wide", w, line, lipgloss.Width(line))
		}
	}
	if got := cutLeft("/very/long/path/.faber", 10); got != "…h/.faber" && lipgloss.Width(got) != 10 {
		t.Errorf("cutLeft = %q", got)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond:        "850ms",
		42 * time.Second:              "42s",
		3*time.Minute + 5*time.Second: "3m05s",
		2*time.Hour + 7*time.Minute:   "2h07m",
		76 * time.Hour:                "3d04h",
		-time.Second:                  "0ms",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestBoardKeysAtOnce: keys that arrive in one message (typed fast, or
// sent by tmux) act one by one.
func TestBoardKeysAtOnce(t *testing.T) {
	bh := newBoardHarness(t, 100, 20)
	bh.b.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/etl")})
	if !bh.b.filtering || bh.b.filter != "etl" || len(bh.b.shown) != 1 {
		t.Errorf("/etl in one message: filtering %v, filter %q, %d rows", bh.b.filtering, bh.b.filter, len(bh.b.shown))
	}
}
