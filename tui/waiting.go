package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faber-run/faber/exec"
)

// Why steps wait, in the live view (README "Why a step waits"): the view
// asks the run's owner (Options.Usage) about once a second while the run
// is active; a pending or retrying step that waits for resources shows why
// on its row, a fan-out's row how many of its items wait and why the first
// does, and the header a line with the capacity and what is in use. A run
// whose steps request nothing gets no answer (nil): its view is as before.

// askUsage is the question to the owner when one is due, else nil.
func (m *Model) askUsage() tea.Cmd {
	ask := m.opt.Usage
	if ask == nil || m.asking || m.runStatus != "" {
		return nil
	}
	now := m.now()
	if !m.askedAt.IsZero() && now.Sub(m.askedAt) < usageEvery {
		return nil
	}
	m.asking, m.askedAt = true, now
	return func() tea.Msg { return usageMsg{usage: ask()} }
}

// setUsage takes the owner's answer (nil: nothing to show).
func (m *Model) setUsage(u *exec.Usage) {
	if m.runStatus != "" {
		u = nil
	}
	h := m.headerH()
	m.usage, m.waitWhy, m.waitItems = u, nil, nil
	if m.headerH() != h {
		m.scrollTo() // the list lost or gained the capacity line's row
	}
	if u == nil || len(u.Waiting) == 0 {
		return
	}
	m.waitWhy = make(map[string]string, len(u.Waiting))
	for _, w := range u.Waiting {
		id := w.Step
		if it := m.items[id]; it != nil {
			id = it.fan
			if m.waitItems == nil {
				m.waitItems = map[string]int{}
			}
			m.waitItems[id]++
		}
		if _, ok := m.waitWhy[id]; !ok {
			m.waitWhy[id] = w.Reason
		}
	}
}

// usageLine is the header's capacity line ("" when the owner said nothing,
// or the window is too low to spare a line).
func (m *Model) usageLine() string {
	if m.usage == nil || m.height < 10 {
		return ""
	}
	return m.st.Dim.Render(m.usage.CapacityText())
}

// headerH is how many lines the header takes.
func (m *Model) headerH() int {
	h := 2
	if m.usage != nil && m.height >= 10 {
		h++
	}
	if m.budgetLine() != "" {
		h++
	}
	return h
}

// waitText is why the step of row r waits for resources ("" when it does
// not): on a fan-out's row, how many of its items wait and why the first
// does.
func (m *Model) waitText(r *stepRow) string {
	why := m.waitWhy[r.def.ID]
	if why == "" {
		return ""
	}
	if n := m.waitItems[r.def.ID]; n > 0 {
		return m.st.Warn.Render(fmt.Sprintf("%d %s %s", n, plural(n, "item", "items"), why))
	}
	if r.status != exec.StatusPending && r.status != exec.StatusRetrying {
		return ""
	}
	return m.st.Warn.Render(why)
}
