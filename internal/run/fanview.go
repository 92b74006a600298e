package run

import (
	"fmt"
	"strings"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
)

// How the dry run and the graph show fan-outs (README, "Dry run and graph").
// Everything they know of a fan-out comes from FanOutOf, itemShown and
// itemVars, so that a change in how fan-outs are modelled (items read when
// the step is ready) changes this file only.

// ShownItems is how many items of each fan-out the text of a dry run and
// of a graph shows; the others are counted.
const ShownItems = 5

// PhItem stands for an item's value ({item}) in a fan-out's item command;
// {item.<name>} shows as <item.<name>>.
const PhItem = "<item>"

// FanOut is a fan-out as the dry run and the graph describe it, on its join
// step.
type FanOut struct {
	// Kind is list, range, glob, lines or matrix.
	Kind string `json:"kind"`
	// Source is a glob's pattern or a lines: file.
	Source string `json:"source,omitempty"`
	// Items is how many items the fan-out has now; for items from upstream,
	// how many the glob or file gives now.
	Items int `json:"items"`
	// FromUpstream: the items come from files (glob:, lines:) and the step
	// has needs, so they are read when the step is ready, after its needs,
	// and may differ from those found now.
	FromUpstream bool `json:"from_upstream"`
	// Needs are the fan-out step's own needs (its items wait for them).
	Needs []string `json:"needs"`
	// MaxParallel is max_parallel (0: none).
	MaxParallel int `json:"max_parallel,omitempty"`

	itemIDs []string
}

// ReadItemsNow gives every glob:/lines: fan-out of p the items its files
// give now. A run reads them when the step is ready, after its needs; the
// dry run and the graph show what they would be now, and FanOut.String
// says so. A source that cannot be read now leaves the fan-out with none.
func ReadItemsNow(p *spec.Plan) {
	sets := map[*spec.Step][]string{}
	for _, s := range p.Steps {
		if !s.Join || s.FanOut == nil || !s.FanOut.Dynamic || s.FanOut.Kind == "from" {
			continue // a from: fan-out's items are known once its upstream ran
		}
		values, err := p.ReadItems(s, exec.StepVars(p, s, PhRunID, PhAttempt, nil))
		if err != nil {
			continue
		}
		sets[s] = values
	}
	p.SetItemsAll(sets) // one pass over the steps for all of them
}

// FanOutOf describes the fan-out of join step s; nil when s is no join.
func FanOutOf(s *spec.Step) *FanOut {
	if s == nil || !s.Join || s.FanOut == nil {
		return nil
	}
	fo := s.FanOut
	f := &FanOut{Kind: fo.Kind, Source: fo.Source, Items: len(fo.ItemIDs), Needs: fo.Needs,
		MaxParallel: fo.MaxParallel, itemIDs: fo.ItemIDs}
	if f.Needs == nil {
		f.Needs = []string{}
	}
	f.FromUpstream = (fo.Kind == "glob" || fo.Kind == "lines") && len(fo.Needs) > 0 || fo.Kind == "from"
	return f
}

// String is the fan-out on one line: `10 items from foreach list`, or for
// items read from files `items from glob "data/*.txt" when the step is
// ready, after fetch (3 now)`.
func (f *FanOut) String() string {
	switch f.Kind {
	case "from":
		return fmt.Sprintf("items from %s when the step is ready (a value an upstream step publishes)", f.Source)
	case "glob", "lines":
		s := fmt.Sprintf("items from %s %q when the step is ready", f.Kind, f.Source)
		if f.FromUpstream {
			s += ", after " + strings.Join(f.Needs, ", ")
		}
		return s + fmt.Sprintf(" (%d now)", f.Items)
	case "matrix":
		return fmt.Sprintf("%d %s from matrix", f.Items, plural(f.Items, "item", "items"))
	}
	return fmt.Sprintf("%d %s from foreach %s", f.Items, plural(f.Items, "item", "items"), f.Kind)
}

// ItemsText lists the item ids, the first ShownItems and a count of the
// others: `work[a], work[b], ... and 95 more`, or `none now`.
func (f *FanOut) ItemsText() string {
	ids := f.itemIDs
	if len(ids) == 0 {
		return "none now"
	}
	if len(ids) <= ShownItems {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:ShownItems], ", "), len(ids)-ShownItems)
}

// itemShown reports whether the text of a dry run or graph shows item step
// s in full: every step that is no item, and the first ShownItems items of
// each fan-out (in the fan-out's order).
func itemShown(s *spec.Step) bool {
	return s == nil || s.Item == nil || s.Item.Index < ShownItems
}

// ItemShown is itemShown by id, for the printers.
func ItemShown(p *spec.Plan, id string) bool { return itemShown(p.Step(id)) }

// itemVars are the item variables of join step s with placeholders:
// item as <item>, item.<name> as <item.<name>>.
func itemVars(s *spec.Step) map[string]string {
	v := map[string]string{"item": PhItem}
	if s.FanOut != nil {
		for _, n := range s.FanOut.Names {
			v["item."+n] = "<item." + n + ">"
		}
	}
	return v
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Node is what the text and dot graphs show for a step: the step itself,
// or, for items of a fan-out past the first ShownItems, one node per
// fan-out and level standing for all of them.
type Node struct {
	ID     string     // the step id; for a group, <fan-out>[...] and its level
	Label  string     // the step id; for a group, `95 more items of work`
	Phase  string     // the step's phase
	Hidden int        // how many items a group stands for (0: a step)
	Join   *FanOut    // the fan-out of a join step
	Step   *spec.Step // the step; for a group, its first item
}

// GraphNodes maps every step id of p (not the end step) to its node.
func GraphNodes(p *spec.Plan) map[string]*Node {
	nodes := make(map[string]*Node, len(p.Steps))
	for i, level := range p.Levels() {
		groups := map[string]*Node{}
		for _, s := range level {
			if itemShown(s) {
				nodes[s.ID] = &Node{ID: s.ID, Label: s.ID, Phase: s.Phase, Join: FanOutOf(s), Step: s}
				continue
			}
			g := groups[s.FanOutOf]
			if g == nil {
				g = &Node{ID: fmt.Sprintf("%s[...]@%d", s.FanOutOf, i+1), Phase: s.Phase, Step: s}
				groups[s.FanOutOf] = g
			}
			g.Hidden++
			g.Label = fmt.Sprintf("%d more %s of %s", g.Hidden, plural(g.Hidden, "item", "items"), s.FanOutOf)
			nodes[s.ID] = g
		}
	}
	return nodes
}
