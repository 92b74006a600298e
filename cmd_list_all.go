package main

import (
	"bufio"
	"fmt"
	"github.com/faber-run/faber/exec"
	"slices"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/tui"
)

// dirItem is a run of 'faber list --all': a run of one of the known state
// dirs, and that dir.
type dirItem struct {
	run.ListItem
	StateDir string `json:"state_dir"`
}

// allRuns returns the runs of every known state dir (knownStateDirs) that
// pass f, newest first; --limit keeps the N newest top-level runs across
// all of them, each with its child runs. A state dir that cannot be read is
// left out, said to warn.
func allRuns(g *Globals, f run.ListFilter, warn func(string)) []dirItem {
	var all []dirItem
	for _, d := range knownStateDirs(g, warn) {
		// With --limit, the N newest trees of each dir hold the N newest
		// of all of them.
		items, err := run.List(d, f)
		if err != nil {
			warn(fmt.Sprintf("skipped the state dir %s: %v", d, err))
			continue
		}
		for _, it := range items {
			all = append(all, dirItem{it, d})
		}
	}
	slices.SortStableFunc(all, func(a, b dirItem) int { return b.StartedAt.Compare(a.StartedAt) })
	if f.Limit <= 0 {
		return all
	}
	type key struct{ dir, id string }
	parent := map[key]key{}
	in := map[key]bool{}
	for _, it := range all {
		in[key{it.StateDir, it.RunID}] = true
	}
	for _, it := range all {
		if p := (key{it.StateDir, it.ParentRunID}); it.ParentRunID != "" && in[p] {
			parent[key{it.StateDir, it.RunID}] = p
		}
	}
	top := func(k key) key {
		for range len(all) + 1 { // a cycle (hand-edited metadata) ends it
			p, ok := parent[k]
			if !ok {
				break
			}
			k = p
		}
		return k
	}
	kept := map[key]bool{}
	n := 0
	for _, it := range all {
		k := key{it.StateDir, it.RunID}
		if _, child := parent[k]; !child && n < f.Limit {
			kept[k] = true
			n++
		}
	}
	res := all[:0]
	for _, it := range all {
		if kept[top(key{it.StateDir, it.RunID})] {
			res = append(res, it)
		}
	}
	return res
}

// listAll is 'faber list --all'.
func (c *ListCmd) listAll(g *Globals, filter run.ListFilter) error {
	items := allRuns(g, filter, func(msg string) { fmt.Fprintf(g.stderr, "faber: warning: %s\n", msg) })
	if c.JSON {
		if items == nil {
			items = []dirItem{}
		}
		return printJSON(g.stdout, items)
	}
	if len(items) == 0 {
		matching := ""
		if filter.Statuses != nil || filter.Plan != "" {
			matching = "matching "
		}
		fmt.Fprintf(g.stdout, "no %sruns in any state dir faber knows (this one: %s)\n", matching, g.StateDir)
		return nil
	}
	s := tui.NewStyles(useColor(g, g.stdout))
	out := bufio.NewWriter(g.stdout)
	tw := tui.NewTable(out) // padded by display width: the status cells are coloured
	fmt.Fprintln(tw, "RUN\tPLAN\tSTATUS\tSTARTED\tDURATION\tDIR")
	type key struct{ dir, id string }
	known := map[key]bool{}
	for _, it := range items {
		known[key{it.StateDir, it.RunID}] = true
	}
	children := map[key][]dirItem{}
	for _, it := range items {
		if p := (key{it.StateDir, it.ParentRunID}); it.ParentRunID != "" && known[p] {
			children[p] = append(children[p], it)
		}
	}
	var row func(it dirItem, indent string, depth int)
	row = func(it dirItem, indent string, depth int) {
		dur := "-"
		if it.FinishedAt != nil {
			dur = exec.FormatDuration(it.FinishedAt.Sub(it.StartedAt))
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s %s\t%s\t%s\t%s\n", indent, it.RunID, it.Plan, s.Glyph(it.Status), it.Status,
			it.StartedAt.Local().Format("2006-01-02 15:04:05"), dur, shortDir(it.StateDir))
		if depth > len(items) {
			return // a cycle
		}
		for _, c := range children[key{it.StateDir, it.RunID}] {
			row(c, indent+"  └ ", depth+1)
		}
	}
	for _, it := range items {
		if it.ParentRunID == "" || !known[key{it.StateDir, it.ParentRunID}] {
			row(it, "", 0)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}
