package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/faber-run/faber/exec"
)

// TestNarrowRowsKeepTheError: at 120, 80 and 60 columns (and 50 and 40,
// where the status word gives way to its glyph) a failed step's and a
// pending_failed step's rows still show the start of their error, a
// running step's row its newest line, and the footer how to get help and
// leave; no line is wider than the window.
func TestNarrowRowsKeepTheError(t *testing.T) {
	ids := []string{"prepare-the-input-data-set", "train-the-model-on-all-shards", "evaluate", "publish"}
	m, _ := newTestModel(t, defs("main", ids...)...)
	feed(m,
		status(ids[0], exec.StatusRemediationFailed, 2, map[string]any{"exit_code": 3, "error": "disk quota exceeded on /scratch"}),
		status(ids[1], exec.StatusPendingFailed, 1, map[string]any{"exit_code": 137, "error": "oom-killed"}),
		status(ids[2], exec.StatusInProgress, 1, nil), line(ids[2], "stdout", "epoch 3 of 10"),
	)
	for _, w := range []int{120, 80, 60, 50, 40} {
		m.Update(tea.WindowSizeMsg{Width: w, Height: 20})
		v := m.View()
		checkSize(t, v, w, 20)
		plain := ansi.Strip(v)
		wants := map[string]string{ids[0]: "exit 3: disk", ids[1]: "exit 137: oom-k", ids[2]: "epoch 3"}
		if w == 40 {
			wants[ids[1]] = "exit 137: oom"
		}
		for id, want := range wants {
			row := rowWith(t, plain, id)
			if !strings.Contains(row, want) {
				t.Errorf("at %d columns the row of %s lacks %q: %q", w, id, want, row)
			}
			// the status word, cut to in_progress's width below 100 columns
			if st := m.byID[id].status; w >= statusMin && !strings.Contains(row, st[:min(len(st), 10)]) {
				t.Errorf("at %d columns the row of %s lacks its status: %q", w, id, row)
			}
		}
		lines := strings.Split(plain, "\n")
		foot := lines[len(lines)-1]
		for _, want := range []string{"? help", "q leave"} {
			if !strings.Contains(foot, want) {
				t.Errorf("at %d columns the footer lacks %q: %q", w, want, foot)
			}
		}
		key(m, "enter")
		lines = strings.Split(ansi.Strip(m.View()), "\n")
		if foot := lines[len(lines)-1]; !strings.Contains(foot, "q leave") || !strings.Contains(foot, "/ search") && w > 40 {
			t.Errorf("at %d columns the log's footer lacks q leave or / search: %q", w, foot)
		}
		key(m, "enter")
	}
}

// rowWith is the list row of step id, its id maybe cut with "…".
func rowWith(t *testing.T, view, id string) string {
	t.Helper()
	for _, l := range strings.Split(view, "\n") {
		f := strings.Fields(l)
		for i, w := range f {
			if i <= 2 && (w == id || strings.HasSuffix(w, "…") && strings.HasPrefix(id, strings.TrimSuffix(w, "…"))) {
				return l
			}
		}
	}
	t.Fatalf("no row for %q in view:\n%s", id, view)
	return ""
}
