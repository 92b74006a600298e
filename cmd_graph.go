package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
)

// GraphCmd prints a plan's dependency graph.
type GraphCmd struct {
	Plan   string   `arg:"" name:"plan" predictor:"plan" help:"Plan file (.yaml, .yml or .json)."`
	Set    setFlags `name:"set" placeholder:"KEY=VALUE" help:"Override a context variable (repeatable; one --set is one KEY=VALUE)."`
	Format string   `name:"format" enum:"text,dot,json" default:"text" help:"Output: text (levels and a -> b edges), dot (Graphviz, phases as clusters) or json."`
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
	plan, _, _, err := loadPlan(g, c.Plan, c.Set)
	if err != nil {
		return err
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
func printGraph(w io.Writer, p *spec.Plan) {
	levels := p.Levels()
	fmt.Fprintln(w, planSummary(p, len(levels)))
	for i, level := range levels {
		ids := make([]string, len(level))
		for j, s := range level {
			ids[j] = s.ID
		}
		fmt.Fprintf(w, "level %d: %s\n", i+1, strings.Join(ids, ", "))
		for _, s := range level {
			for _, d := range s.Deps {
				fmt.Fprintf(w, "  %s -> %s\n", d, s.ID)
			}
		}
	}
	if p.End != nil {
		fmt.Fprintf(w, "end step: %s, runs last, after every step\n", p.End.ID)
	}
}

// printDot writes a Graphviz digraph: one cluster per phase, an edge from
// each dependency to the step that needs it, and the end step after the
// steps nothing depends on (dashed).
func printDot(w io.Writer, p *spec.Plan) {
	fmt.Fprintf(w, "digraph %s {\n", dotID(p.Name))
	fmt.Fprintln(w, "  rankdir=LR;")
	fmt.Fprintln(w, "  node [shape=box];")
	for i, ph := range p.Phases {
		fmt.Fprintf(w, "  subgraph %s {\n", dotID(fmt.Sprintf("cluster_%d", i+1)))
		fmt.Fprintf(w, "    label=%s;\n", dotID(ph.Name))
		for _, s := range ph.Steps {
			fmt.Fprintf(w, "    %s%s;\n", dotID(s.ID), dotAttrs(s))
		}
		fmt.Fprintln(w, "  }")
	}
	for _, s := range p.Steps {
		for _, d := range s.Deps {
			fmt.Fprintf(w, "  %s -> %s;\n", dotID(d), dotID(s.ID))
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
	fmt.Fprintln(w, "}")
}

// dotAttrs is a node's attribute list: a label with its name when that
// differs from its id, and extra.
func dotAttrs(s *spec.Step, extra ...string) string {
	attrs := extra
	if s.Name != "" && s.Name != s.ID {
		attrs = append(attrs, "label="+dotID(s.ID+"\n"+s.Name))
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
