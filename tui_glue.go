package main

import (
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/tui"
)

// newTUI returns the live terminal view for a run.
func newTUI(g *Globals, plan *spec.Plan, runID string) renderer {
	return tui.NewPlain(g.stdout, tui.NewStyles(useColor(g, g.stdout)), true)
}
