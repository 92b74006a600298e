package tui

import (
	"io"

	"github.com/faber-run/faber/exec"
)

// What faber attach needs of the live view besides what faber run uses.

// NewForeground starts the live view of a run that a background process
// owns on this one's behalf (faber run in a terminal): it is fed as attach's
// view is (the run's event log and log files) and its keys are faber run's
// (Ctrl-C goes to Options.OnInterrupt, r / x x decide, q leaves). q leaves
// the view with nothing printed: Left is closed, Detached is true, and the
// caller says how to come back. Any other early end falls back to plain
// lines, as New's does.
func NewForeground(out io.Writer, in io.Reader, opt Options) *TUI {
	t := New(out, in, opt)
	t.mu.Lock()
	t.foreground = true
	t.mu.Unlock()
	return t
}

// Leave ends the view as q does: the run is not touched. Left is closed once
// the terminal is restored.
func (t *TUI) Leave() { go t.prog.Send(leaveMsg{}) }

// Detached reports whether the view was left (q, Ctrl-C in an attached view,
// or Leave) rather than ended by Close. Valid once Left is closed.
func (t *TUI) Detached() bool { return t.model.Detached() }

// Err is why the view stopped on its own (a terminal it could not use), or
// nil. Valid once Left is closed.
func (t *TUI) Err() error { return t.runErr }

// SummaryOf is the final summary of a run from its events, as the live view
// leaves it on the screen, for a run that ended before anyone watched.
func SummaryOf(opt Options, events []exec.Event) string {
	m := NewModel(opt)
	for _, e := range events {
		m.apply(e)
	}
	if m.rowsDirty {
		m.layoutRows()
	}
	return m.Summary()
}
