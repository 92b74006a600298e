package run

import (
	"slices"

	"github.com/faber-run/faber/spec"
)

// GraphOut is the JSON document of `faber graph --format json`.
type GraphOut struct {
	Plan   string       `json:"plan"`
	File   string       `json:"file"`
	Levels [][]string   `json:"levels"`
	Steps  []GraphStep  `json:"steps"`
	Edges  []GraphEdge  `json:"edges"`
	End    *GraphStep   `json:"end"`
	Phases []GraphPhase `json:"phases"`
	// Flows are the values steps pass on (README "Step outputs").
	Flows []GraphFlow `json:"flows"`
}

// GraphFlow is a value passing from a step to one that uses it: To
// substitutes {steps.From.outputs.KEY} for each of Keys. Direct says From is
// among To's needs (else it is further upstream, or To is the end step).
type GraphFlow struct {
	From   string   `json:"from"`
	To     string   `json:"to"`
	Keys   []string `json:"keys"`
	Direct bool     `json:"direct"`
}

// Flows lists the values that pass between the plan's steps, in plan order
// of the step that uses them (the end step last), then of first use.
func Flows(p *spec.Plan) []GraphFlow {
	var out []GraphFlow
	steps := p.Steps
	if p.End != nil {
		steps = append(append([]*spec.Step{}, steps...), p.End)
	}
	for _, s := range steps {
		at := map[string]int{}
		for _, u := range s.Uses {
			i, ok := at[u.Step]
			if !ok {
				i = len(out)
				at[u.Step] = i
				out = append(out, GraphFlow{From: u.Step, To: s.ID, Direct: slices.Contains(s.Deps, u.Step)})
			}
			if !slices.Contains(out[i].Keys, u.Key) {
				out[i].Keys = append(out[i].Keys, u.Key)
			}
		}
	}
	return out
}

// GraphStep is one step of the graph.
type GraphStep struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Phase         string   `json:"phase"`
	Level         int      `json:"level"`
	Needs         []string `json:"needs"`
	NeedsExplicit bool     `json:"needs_explicit"`
	// FanOut names an item step's fan-out step; Join describes the fan-out
	// of a join step.
	FanOut string  `json:"fan_out,omitempty"`
	Join   *FanOut `json:"join,omitempty"`
	// When is the step's condition (when:).
	When string `json:"when,omitempty"`
}

// GraphEdge is a dependency: To needs From.
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// GraphPhase is one phase of the plan with its steps.
type GraphPhase struct {
	Name     string   `json:"name"`
	Parallel bool     `json:"parallel"`
	Steps    []string `json:"steps"`
}

// Graph is a validated plan's dependency graph: the steps level by level,
// each with the steps it needs, the end step, and the phases.
func Graph(p *spec.Plan) GraphOut {
	ReadItemsNow(p)
	out := GraphOut{Plan: p.Name, File: p.File, Levels: LevelIDs(p), Steps: []GraphStep{}, Edges: []GraphEdge{}, Phases: []GraphPhase{}, Flows: Flows(p)}
	if out.Flows == nil {
		out.Flows = []GraphFlow{}
	}
	for i, level := range p.Levels() {
		for _, s := range level {
			needs := s.Deps
			if needs == nil {
				needs = []string{}
			}
			gs := GraphStep{ID: s.ID, Name: s.Name, Phase: s.Phase, Level: i + 1, Needs: needs, NeedsExplicit: s.NeedsSet,
				FanOut: s.FanOutOf, Join: FanOutOf(s)}
			if s.When != nil {
				gs.When = s.When.Src
			}
			out.Steps = append(out.Steps, gs)
			for _, d := range s.Deps {
				out.Edges = append(out.Edges, GraphEdge{From: d, To: s.ID})
			}
		}
	}
	if p.End != nil {
		out.End = &GraphStep{ID: p.End.ID, Name: p.End.Name, Level: len(out.Levels) + 1, Needs: []string{}}
	}
	for _, ph := range p.Phases {
		ids := make([]string, len(ph.Steps))
		for i, s := range ph.Steps {
			ids[i] = s.ID
		}
		out.Phases = append(out.Phases, GraphPhase{Name: ph.Name, Parallel: ph.Parallel, Steps: ids})
	}
	return out
}
