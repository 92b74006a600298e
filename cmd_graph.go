package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
)

// GraphCmd prints a plan's dependency graph.
type GraphCmd struct {
	Plan    string   `arg:"" name:"plan" predictor:"plan" help:"Plan file (.yaml, .yml or .json)."`
	Set     setFlags `name:"set" placeholder:"KEY=VALUE" help:"Override a context variable (repeatable; one --set is one KEY=VALUE)."`
	SetFile setFlags `name:"set-file" placeholder:"KEY=PATH" help:"Set a context variable to a file's content, one trailing newline dropped (repeatable)."`
	Format  string   `name:"format" enum:"text,dot,json" default:"text" help:"Output: text (levels and a -> b edges), dot (Graphviz, phases as clusters) or json."`
	JSON    bool     `name:"json" help:"The same as --format json."`
}

// Help explains graph.
func (c *GraphCmd) Help() string {
	return `Validates PLAN exactly as 'faber run' does, then prints its dependency graph:
the steps level by level (a step sits one level after the latest step it
needs; steps of one level may run at the same time), each level followed by
the dependencies into it. The end step comes last. Nothing runs, nothing is
written. Exits 2 if the plan is invalid.

Examples:
  faber graph plan.yaml                     levels, and edges a -> b (b needs a)
  faber graph plan.yaml --format dot | dot -Tsvg > plan.svg
  faber graph plan.yaml --format json | jq '.levels'`
}

// Run validates the plan and prints its graph.
func (c *GraphCmd) Run(g *Globals) error {
	plan, _, _, err := loadPlan(g, c.Plan, setSources{sets: c.Set, files: c.SetFile, env: os.Environ()})
	if err != nil {
		return err
	}
	if c.JSON {
		if c.Format != "text" && c.Format != "json" {
			return withCode(exitUsage, fmt.Errorf("--json is --format json; it cannot go with --format %s", c.Format))
		}
		c.Format = "json"
	}
	switch c.Format {
	case "dot":
		printDot(g.stdout, plan)
	case "json":
		return writeJSON(g.stdout, run.Graph(plan))
	default:
		printGraph(g.stdout, plan)
	}
	return nil
}

// printGraph writes the levels, each followed by the edges into its steps.
// A fan-out shows its first items and counts the others (run.GraphNodes);
// its join step says where the items come from.
func printGraph(w io.Writer, p *spec.Plan) {
	levels := p.Levels()
	nodes := run.GraphNodes(p)
	fmt.Fprintln(w, planSummary(p, len(levels)))
	for i, level := range levels {
		var names []string
		seen := map[*run.Node]bool{}
		type edge struct{ from, to *run.Node }
		var edges []edge
		seenEdge := map[edge]bool{}
		for _, s := range level {
			n := nodes[s.ID]
			if !seen[n] {
				seen[n] = true
				names = append(names, graphName(n))
			}
			for _, d := range s.Deps {
				e := edge{nodes[d], n}
				if !seenEdge[e] {
					seenEdge[e] = true
					edges = append(edges, e)
				}
			}
		}
		fmt.Fprintf(w, "level %d: %s\n", i+1, strings.Join(names, ", "))
		for _, e := range edges {
			fmt.Fprintf(w, "  %s -> %s\n", edgeName(e.from), edgeName(e.to))
		}
	}
	if p.End != nil {
		fmt.Fprintf(w, "end step: %s, runs last, after every step\n", p.End.ID)
	}
	// The values steps pass on, once per fan-out (its items use the same).
	var lines []string
	for _, f := range run.Flows(p) {
		to := f.To
		if n := nodes[f.To]; n != nil {
			to = edgeName(n)
		}
		l := fmt.Sprintf("  %s -> %s: %s", f.From, to, strings.Join(f.Keys, ", "))
		if !f.Direct && f.To != "end" {
			l += " (from further upstream)"
		}
		if !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "values passed:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	var conds []string
	for _, s := range p.Steps {
		if s.When != nil && s.Item == nil {
			conds = append(conds, fmt.Sprintf("  %s: when %s", s.ID, s.When.Src))
		}
	}
	if len(conds) > 0 {
		fmt.Fprintln(w, "conditions (false: skipped):")
		for _, l := range conds {
			fmt.Fprintln(w, l)
		}
	}
}

// graphName is a node on a level line: a join with its fan-out, items not
// shown as `... and 95 more items of work`.
func graphName(n *run.Node) string {
	switch {
	case n.Hidden > 0:
		return "... and " + n.Label
	case n.Join != nil:
		return fmt.Sprintf("%s (join of %s)", n.Label, n.Join)
	}
	return n.Label
}

// edgeName is a node in an edge line: items not shown in parentheses.
func edgeName(n *run.Node) string {
	if n.Hidden > 0 {
		return "(" + n.Label + ")"
	}
	return n.Label
}

// printDot writes a Graphviz digraph: one cluster per phase, an edge from
// each dependency to the step that needs it, and the end step after the
// steps nothing depends on (dashed). A fan-out shows as in the text; its
// join step is a diamond labelled with its fan-out.
func printDot(w io.Writer, p *spec.Plan) {
	nodes := run.GraphNodes(p)
	fmt.Fprintf(w, "digraph %s {\n", dotID(p.Name))
	fmt.Fprintln(w, "  rankdir=LR;")
	fmt.Fprintln(w, "  node [shape=box];")
	drawn := map[*run.Node]bool{}
	for i, ph := range p.Phases {
		fmt.Fprintf(w, "  subgraph %s {\n", dotID(fmt.Sprintf("cluster_%d", i+1)))
		fmt.Fprintf(w, "    label=%s;\n", dotID(ph.Name))
		for _, s := range ph.Steps {
			n := nodes[s.ID]
			if drawn[n] {
				continue
			}
			drawn[n] = true
			fmt.Fprintf(w, "    %s%s;\n", dotID(n.ID), dotNodeAttrs(n))
		}
		fmt.Fprintln(w, "  }")
	}
	type edge struct{ from, to *run.Node }
	// A dependency that passes values is labelled with their keys; a value
	// from further upstream (or to the end step) is a dotted edge of its own.
	labels := map[edge][]string{}
	var far []edge
	for _, f := range run.Flows(p) {
		to := nodes[f.To]
		if f.To == "end" && p.End != nil {
			to = &run.Node{ID: p.End.ID}
		}
		e := edge{nodes[f.From], to}
		if !f.Direct {
			if _, ok := labels[e]; !ok {
				far = append(far, e)
			}
		}
		for _, k := range f.Keys {
			if !slices.Contains(labels[e], k) {
				labels[e] = append(labels[e], k)
			}
		}
	}
	label := func(e edge) string {
		if ks := labels[e]; len(ks) > 0 {
			return "label=" + dotID(strings.Join(ks, ", "))
		}
		return ""
	}
	seenEdge := map[edge]bool{}
	for _, s := range p.Steps {
		for _, d := range s.Deps {
			e := edge{nodes[d], nodes[s.ID]}
			if seenEdge[e] {
				continue
			}
			seenEdge[e] = true
			attrs := ""
			if l := label(e); l != "" {
				attrs = " [" + l + "]"
			}
			fmt.Fprintf(w, "  %s -> %s%s;\n", dotID(e.from.ID), dotID(e.to.ID), attrs)
		}
	}
	if p.End != nil {
		fmt.Fprintf(w, "  %s%s;\n", dotID(p.End.ID), dotAttrs(p.End, "style=dashed"))
		deps := p.Dependents()
		for _, s := range p.Steps {
			if len(deps[s.ID]) == 0 {
				fmt.Fprintf(w, "  %s -> %s [style=dashed];\n", dotID(s.ID), dotID(p.End.ID))
			}
		}
	}
	for _, e := range far {
		if !seenEdge[e] {
			seenEdge[e] = true
			fmt.Fprintf(w, "  %s -> %s [style=dotted, constraint=false, %s];\n", dotID(e.from.ID), dotID(e.to.ID), label(e))
		}
	}
	fmt.Fprintln(w, "}")
}

// dotNodeAttrs are the attributes of a graph node: a step's (dotAttrs), a
// join's diamond with its fan-out, or a group's dotted box with its count.
func dotNodeAttrs(n *run.Node) string {
	switch {
	case n.Hidden > 0:
		return " [" + "style=dotted, label=" + dotID(n.Label) + "]"
	case n.Join != nil:
		label := n.ID
		if n.Step.Name != "" && n.Step.Name != n.ID {
			label += "\n" + n.Step.Name
		}
		return " [shape=diamond, label=" + dotID(label+"\njoin of "+n.Join.String()) + "]"
	}
	return dotAttrs(n.Step)
}

// dotAttrs is a node's attribute list: a label with its name when that
// differs from its id, and extra.
func dotAttrs(s *spec.Step, extra ...string) string {
	attrs := extra
	label := s.ID
	if s.Name != "" && s.Name != s.ID {
		label += "\n" + s.Name
	}
	if s.When != nil {
		// A conditional step: its condition under its name.
		label += "\nwhen: " + s.When.Src
	}
	if label != s.ID {
		attrs = append(attrs, "label="+dotID(label))
	}
	if len(attrs) == 0 {
		return ""
	}
	return " [" + strings.Join(attrs, ", ") + "]"
}

// dotID quotes s as a Graphviz ID: a double-quoted string with `"` and `\`
// escaped and newlines written as \n.
func dotID(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}
