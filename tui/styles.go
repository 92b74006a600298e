package tui

import (
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/faber-run/faber/exec"
)

// Styles holds every colour and glyph faber uses, in one place, so that
// NO_COLOR and --no-color switch them all off together.
type Styles struct {
	Color   bool
	Dim     lipgloss.Style
	Bold    lipgloss.Style
	Warn    lipgloss.Style
	Error   lipgloss.Style
	OK      lipgloss.Style
	Running lipgloss.Style
	Pending lipgloss.Style
	Alert   lipgloss.Style
	Header  lipgloss.Style
	Select  lipgloss.Style
	// Stdout and Stderr mark a step's output lines in the live view; Rule
	// draws separators.
	Stdout lipgloss.Style
	Stderr lipgloss.Style
	Rule   lipgloss.Style

	// plain is set by NewStyles(false): no style adds anything to a line.
	plain bool
}

// envColorProfile picks how many colours the terminal takes: 24-bit when
// COLORTERM says so, the 16 basic ones on the Linux console, else 256.
func envColorProfile() termenv.Profile {
	ct := strings.ToLower(os.Getenv("COLORTERM"))
	switch {
	case ct == "truecolor" || ct == "24bit":
		return termenv.TrueColor
	case os.Getenv("TERM") == "linux":
		return termenv.ANSI
	}
	return termenv.ANSI256
}

// NewStyles returns the styles, plain when color is false.
func NewStyles(color bool) Styles {
	// The renderer does not look at a terminal: whether to colour is decided
	// by the caller (NO_COLOR, --no-color, a terminal on stdout), so the
	// profile is set explicitly; detection on a nil writer would always
	// answer "no colours".
	r := lipgloss.NewRenderer(io.Discard)
	if color {
		r.SetColorProfile(envColorProfile())
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	s := Styles{Color: color, plain: !color}
	base := r.NewStyle()
	s.Dim = base.Faint(color)
	s.Bold = base.Bold(color)
	s.Warn = base
	s.Error = base
	s.OK = base
	s.Running = base
	s.Pending = base
	s.Alert = base
	s.Header = base.Bold(color)
	s.Select = base.Reverse(color)
	s.Stdout = base
	s.Stderr = base
	s.Rule = base.Faint(color)
	if color {
		s.Warn = base.Foreground(lipgloss.Color("214"))
		s.Error = base.Foreground(lipgloss.Color("203")).Bold(true)
		s.OK = base.Foreground(lipgloss.Color("42"))
		s.Running = base.Foreground(lipgloss.Color("39"))
		s.Pending = base.Foreground(lipgloss.Color("245"))
		s.Alert = base.Foreground(lipgloss.Color("0")).Background(lipgloss.Color("214")).Bold(true)
		s.Stderr = base.Foreground(lipgloss.Color("203"))
	}
	return s
}

// Render renders str in style st. Without colour, a string of one line
// without tabs comes back as it is (what lipgloss would return) without
// lipgloss's work, which was a few percent of the CPU of a run printing a
// line per step (TestPlainRender compares the two).
func (s Styles) Render(st lipgloss.Style, str string) string {
	if s.plain && strings.IndexAny(str, "\t\r\n") < 0 {
		return str
	}
	return st.Render(str)
}

// Glyph is the one-character mark of a step or run status.
func (s Styles) Glyph(status string) string {
	switch status {
	case exec.StatusSuccess:
		return s.Render(s.OK, "✓")
	case exec.StatusCached:
		return s.Render(s.OK, "≡")
	case exec.StatusFailure, exec.RunFailed, exec.StatusRemediationFailed:
		return s.Render(s.Error, "✗")
	case exec.StatusInProgress:
		return s.Render(s.Running, "▶")
	case exec.StatusRetrying:
		return s.Render(s.Warn, "↻")
	case exec.StatusRemediating:
		return s.Render(s.Warn, "⚕")
	case exec.StatusPendingFailed:
		return s.Render(s.Alert, "?")
	case exec.StatusAwaitingApproval:
		return s.Render(s.Alert, "⏸")
	case exec.StatusCanceled:
		return s.Render(s.Dim, "⊘")
	case exec.StatusSkipped:
		return s.Render(s.Dim, "↷")
	case exec.StatusInterrupted:
		return s.Render(s.Warn, "■")
	}
	return s.Render(s.Pending, "·")
}

// Status renders a status word in its colour.
func (s Styles) Status(status string) string {
	return s.Render(s.StatusStyle(status), status)
}

// StatusStyle is the style of a step or run status.
func (s Styles) StatusStyle(status string) lipgloss.Style {
	switch status {
	case exec.StatusSuccess, exec.StatusCached:
		return s.OK
	case exec.StatusFailure, exec.RunFailed, exec.StatusRemediationFailed:
		return s.Error
	case exec.StatusInProgress:
		return s.Running
	case exec.StatusRetrying, exec.StatusRemediating, exec.StatusInterrupted:
		return s.Warn
	case exec.StatusPendingFailed, exec.StatusAwaitingApproval:
		return s.Alert
	case exec.StatusCanceled, exec.StatusSkipped:
		return s.Dim
	}
	return s.Pending
}
