// Package termquiet keeps faber from querying the terminal when it starts.
//
// bubbletea v1 asks the terminal for its background colour in an init
// function (tea_init.go: lipgloss.HasDarkBackground, "removed in v2"), so
// every faber command — list, status, version — wrote OSC 11 and a cursor
// position request (DSR) to a terminal on stdout, and the terminal's answer
// ("1R") landed at the user's prompt. faber decides colours from the
// environment alone (NO_COLOR, --no-color, COLORTERM, a terminal on stdout)
// and never needs that answer.
//
// This package is initialised before termenv, lipgloss and bubbletea (Go
// initialises packages in import-path order among those ready, and it imports
// nothing of theirs): its init sets TERM=dumb, which termenv reads as "do not
// query", and Restore, called first thing in main, puts TERM back before
// anything else reads it or a step inherits it. The original value travels in
// the environment, not in a package variable.
package termquiet

import "os"

const (
	saved = "FABER_TERMQUIET_TERM" // TERM as it was, when it was set
	unset = "FABER_TERMQUIET_UNSET"
)

func init() {
	if v, ok := os.LookupEnv("TERM"); ok {
		os.Setenv(saved, v)
	} else {
		os.Setenv(unset, "1")
	}
	os.Setenv("TERM", "dumb")
}

// Restore puts TERM back as it was before init. Calling it again is harmless.
func Restore() {
	v, ok := os.LookupEnv(saved)
	switch {
	case ok:
		os.Setenv("TERM", v)
	case os.Getenv(unset) == "1":
		os.Unsetenv("TERM")
	default:
		return // restored already
	}
	os.Unsetenv(saved)
	os.Unsetenv(unset)
}
