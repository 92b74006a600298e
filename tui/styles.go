package tui

import (
	"github.com/charmbracelet/lipgloss"

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
}

// NewStyles returns the styles, plain when color is false.
func NewStyles(color bool) Styles {
	r := lipgloss.NewRenderer(nil)
	if !color {
		r.SetColorProfile(0) // termenv.Ascii
	}
	s := Styles{Color: color}
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
	if color {
		s.Warn = base.Foreground(lipgloss.Color("214"))
		s.Error = base.Foreground(lipgloss.Color("203")).Bold(true)
		s.OK = base.Foreground(lipgloss.Color("42"))
		s.Running = base.Foreground(lipgloss.Color("39"))
		s.Pending = base.Foreground(lipgloss.Color("245"))
		s.Alert = base.Foreground(lipgloss.Color("0")).Background(lipgloss.Color("214")).Bold(true)
	}
	return s
}

// Glyph is the one-character mark of a step or run status.
func (s Styles) Glyph(status string) string {
	switch status {
	case exec.StatusSuccess:
		return s.OK.Render("✓")
	case exec.StatusFailure, exec.RunFailed, exec.StatusRemediationFailed:
		return s.Error.Render("✗")
	case exec.StatusInProgress:
		return s.Running.Render("▶")
	case exec.StatusRetrying:
		return s.Warn.Render("↻")
	case exec.StatusRemediating:
		return s.Warn.Render("⚕")
	case exec.StatusPendingFailed:
		return s.Alert.Render("?")
	case exec.StatusCanceled:
		return s.Dim.Render("⊘")
	case exec.StatusInterrupted:
		return s.Warn.Render("■")
	}
	return s.Pending.Render("·")
}

// Status renders a status word in its colour.
func (s Styles) Status(status string) string {
	switch status {
	case exec.StatusSuccess:
		return s.OK.Render(status)
	case exec.StatusFailure, exec.RunFailed, exec.StatusRemediationFailed:
		return s.Error.Render(status)
	case exec.StatusInProgress:
		return s.Running.Render(status)
	case exec.StatusRetrying, exec.StatusRemediating, exec.StatusInterrupted:
		return s.Warn.Render(status)
	case exec.StatusPendingFailed:
		return s.Alert.Render(status)
	case exec.StatusCanceled:
		return s.Dim.Render(status)
	}
	return status
}
