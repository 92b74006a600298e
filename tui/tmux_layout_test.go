package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/tmuxtest"
)

// TestTmuxLayoutSmallScreen runs the real binary in a 60x15 tmux pane with a
// plan of 30 steps: the screen is used whole (no empty row while the list
// says what is below it), the footer shows how to leave, and ? shows every
// key within the screen.
func TestTmuxLayoutSmallScreen(t *testing.T) {
	tm, bin, dir := tmuxtest.New(t, "layout", "..")
	var plan strings.Builder
	plan.WriteString("name: wide\nsteps:\n")
	for i := range 30 {
		fmt.Fprintf(&plan, "  - id: step-number-%02d\n    needs: []\n    run: echo working; while [ ! -f go ]; do sleep 0.1; done\n", i)
	}
	writeFile(t, filepath.Join(dir, "plan.yaml"), plan.String())
	tm.Start("w", dir, bin+" run plan.yaml --ui tui --jobs 2", 60, 15)
	screen := tm.WaitFor("w", 10*time.Second, "the expected screen", func(s string) bool {
		return strings.Contains(s, "more") && strings.Contains(s, "│ working")
	})
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	if len(lines) != 15 {
		t.Errorf("%d lines on a 15-line screen:\n%s", len(lines), screen)
	}
	for i, l := range lines {
		if i != 2 && strings.TrimSpace(l) == "" {
			t.Errorf("line %d is empty while the list overflows:\n%s", i+1, screen)
			break
		}
	}
	if !strings.Contains(lines[len(lines)-1], "q leave") {
		t.Errorf("the footer does not say how to leave: %q", lines[len(lines)-1])
	}
	tm.Keys("w", "?")
	help := tm.WaitFor("w", 5*time.Second, "the expected screen", func(s string) bool { return strings.Contains(s, "keys") })
	for _, k := range []string{"ctrl+c", "q ", "x x", "enter", "G/end"} {
		if !strings.Contains(help, k) {
			t.Errorf("the help on 60x15 lacks %q:\n%s", k, help)
		}
	}
	tm.Keys("w", "Escape")
	writeFile(t, filepath.Join(dir, "go"), "")
	if code := tm.WaitExit("w", dir, 20*time.Second); code != "0" {
		t.Errorf("exit %s, want 0", code)
	}
}
