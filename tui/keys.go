package tui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// Binding is one action of the live view and the keys that trigger it.
type Binding struct {
	Keys []string // as bubbletea names them: "up", "k", "ctrl+c", "enter"
	Help string   // the keys as shown to a person: "↑/k"
	Desc string   // what the action does: "select"
}

// Matches reports whether the key message triggers the binding.
func (b Binding) Matches(msg tea.KeyMsg) bool {
	s := msg.String()
	for _, k := range b.Keys {
		if k == s {
			return true
		}
	}
	return false
}

// KeyMap holds every key binding of the live view, so that help texts and
// key handling never disagree.
type KeyMap struct {
	Up        Binding
	Down      Binding
	PageUp    Binding
	PageDown  Binding
	Top       Binding
	Bottom    Binding
	ToggleLog Binding
	Track     Binding
	Help      Binding
	Close     Binding
	Detach    Binding
	Quit      Binding
	Retry     Binding
	Fail      Binding
	// The log views' keys, as less and k9s have them: wrap, scroll
	// sideways, search and go from match to match.
	Wrap    Binding
	Left    Binding
	Right   Binding
	Search  Binding
	Next    Binding
	Prev    Binding
	Approve Binding
}

// DefaultKeyMap returns faber's key bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:        Binding{Keys: []string{"up", "k"}, Help: "↑/k", Desc: "previous step"},
		Down:      Binding{Keys: []string{"down", "j"}, Help: "↓/j", Desc: "next step"},
		PageUp:    Binding{Keys: []string{"pgup", "ctrl+u", "b"}, Help: "pgup", Desc: "page up"},
		PageDown:  Binding{Keys: []string{"pgdown", "ctrl+d", " "}, Help: "pgdn", Desc: "page down"},
		Top:       Binding{Keys: []string{"home", "g"}, Help: "g/home", Desc: "first step (log: oldest line)"},
		Bottom:    Binding{Keys: []string{"end", "G"}, Help: "G/end", Desc: "last step (log: follow newest)"},
		ToggleLog: Binding{Keys: []string{"enter"}, Help: "enter", Desc: "full-height log"},
		Track:     Binding{Keys: []string{"f"}, Help: "f", Desc: "track the running step (select it as steps start)"},
		Help:      Binding{Keys: []string{"?"}, Help: "?", Desc: "help"},
		Close:     Binding{Keys: []string{"esc"}, Help: "esc", Desc: "clear search, close log or help"},
		Detach:    Binding{Keys: []string{"q"}, Help: "q", Desc: "leave (the run goes on; if it waits for a decision, leave that for later)"},
		Quit:      Binding{Keys: []string{"ctrl+c"}, Help: "ctrl+c", Desc: "interrupt (twice: kill now)"},
		Retry:     Binding{Keys: []string{"r"}, Help: "r", Desc: "retry pending_failed"},
		Fail:      Binding{Keys: []string{"x"}, Help: "x x", Desc: "fail pending_failed, or reject awaiting_approval (press twice)"},
		Wrap:      Binding{Keys: []string{"w"}, Help: "w", Desc: "log: wrap long lines (on/off)"},
		Left:      Binding{Keys: []string{"left", "h"}, Help: "←/h", Desc: "log: scroll left"},
		Right:     Binding{Keys: []string{"right", "l"}, Help: "→/l", Desc: "log: scroll right (when not wrapping)"},
		Search:    Binding{Keys: []string{"/"}, Help: "/", Desc: "log: search (type, enter)"},
		Next:      Binding{Keys: []string{"n"}, Help: "n", Desc: "log: next match"},
		Prev:      Binding{Keys: []string{"N"}, Help: "N", Desc: "log: previous match"},
		Approve:   Binding{Keys: []string{"a"}, Help: "a", Desc: "approve awaiting_approval"},
	}
}

// ShortHelp is the one-line help of the footer.
func (k KeyMap) ShortHelp() []Binding {
	return bound([]Binding{
		{Help: strings.TrimSuffix(k.Up.Help, "/k") + "/" + strings.TrimSuffix(k.Down.Help, "/j"), Desc: "select"},
		{Help: k.ToggleLog.Help, Desc: "log"},
		{Help: k.Track.Help, Desc: "track"},
		{Help: k.Help.Help, Desc: "help"},
		{Help: k.Detach.Help, Desc: "leave"},
		{Help: k.Quit.Help, Desc: "interrupt"},
	})
}

// FullHelp is every binding, for the help screen.
func (k KeyMap) FullHelp() []Binding {
	return bound([]Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.ToggleLog,
		k.Track, k.Wrap, k.Left, k.Right, k.Search, k.Next, k.Prev, k.Retry, k.Fail, k.Approve, k.Help, k.Close, k.Detach, k.Quit})
}

// LogHelp is the footer of the full-height log: its own keys, then the
// ones to get out. A narrow footer drops hints from the right of the
// log's own (matches, scroll, back: esc goes back too), search last.
func (k KeyMap) LogHelp() []Binding {
	return bound([]Binding{
		{Help: k.Search.Help, Desc: "search"},
		{Help: k.Wrap.Help, Desc: "wrap"},
		{Help: k.ToggleLog.Help, Desc: "back"},
		{Help: "←/→", Desc: "scroll"},
		{Help: k.Next.Help + "/" + k.Prev.Help, Desc: "match"},
		{Help: k.Help.Help, Desc: "help"},
		{Help: k.Detach.Help, Desc: "leave"},
		{Help: k.Quit.Help, Desc: "interrupt"},
	})
}

// bound drops the bindings that have no key (Quit in an attached view).
func bound(bs []Binding) []Binding {
	out := bs[:0]
	for _, b := range bs {
		if b.Help != "" {
			out = append(out, b)
		}
	}
	return out
}

// attachedKeys are the bindings of a view of another process's run: q and
// Ctrl-C both leave it; nothing in the view stops the run.
func attachedKeys(k KeyMap) KeyMap {
	k.Detach = Binding{Keys: []string{"q", "ctrl+c"}, Help: "q/ctrl+c", Desc: "leave (the run goes on; faber stop stops it)"}
	k.Quit = Binding{}
	return k
}
