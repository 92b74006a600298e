package spec

import (
	"fmt"
	"sort"

	"github.com/faber-run/faber/spec/subst"
)

// A part of a plan (README "Running a part of a plan"): `faber run PLAN
// STEP... --from STEP` runs some of its steps. The part is the union of each
// target with every step it needs, directly or not, and each --from step
// with every step downstream of it. A fan-out is whole: its items and its
// join are in the part together. The steps left out count as done: the
// dependencies of the steps in the part on them are dropped. The end step
// runs as in any run.

// PartError is a part that cannot be run: a step the plan does not have,
// or a step of the part that uses an output (or, in its condition, the
// status) of a step left out.
type PartError struct{ Msg string }

func (e *PartError) Error() string { return e.Msg }

func partErrorf(format string, args ...any) error {
	return &PartError{Msg: fmt.Sprintf(format, args...)}
}

// Select returns the part of p that targets and from name (see above) as a
// plan of its own: its steps in plan order, sharing what they do not change
// with p's, with the dependencies on steps left out dropped (so a join's
// FanOut.Needs too), phases without a step of the part left out, and
// indexes renumbered. With neither targets nor from it returns p. p is not
// changed.
func (p *Plan) Select(targets, from []string) (*Plan, error) {
	if len(targets) == 0 && len(from) == 0 {
		return p, nil
	}
	for _, id := range append(append([]string(nil), targets...), from...) {
		if err := p.checkPartID(id); err != nil {
			return nil, err
		}
	}
	in := p.partSteps(targets, from)
	if err := p.checkPartRefs(in, nil); err != nil {
		return nil, err
	}
	np := p.part(in)
	if len(targets) > 0 && len(from) > 0 {
		// Either part alone keeps every path between two of its steps
		// (what a step needs is in a target's part; what is between a
		// --from step and a step after it is after it too), their union
		// may not: a step of one may use a step of the other that it
		// depended on through steps left out.
		if err := np.checkPartRefs(nil, np.upstreamOf); err != nil {
			return nil, err
		}
	}
	return np, nil
}

// checkPartID checks a step named on the command line.
func (p *Plan) checkPartID(id string) error {
	if s := p.Step(id); s != nil {
		if s.FanOutOf != "" {
			return partErrorf("step %q is an item of fan-out %q; a part holds whole fan-outs: name %q", id, s.FanOutOf, s.FanOutOf)
		}
		return nil
	}
	if id == "end" && p.End != nil {
		return partErrorf("the end step runs in every run, after the others; name the steps to run before it")
	}
	if base, _, ok := SplitItemID(id); ok {
		if s := p.Step(base); s != nil && s.FanOut != nil {
			return partErrorf("step %q is an item of fan-out %q; a part holds whole fan-outs: name %q", id, base, base)
		}
	}
	ids := make([]string, 0, len(p.Steps))
	for _, s := range p.Steps {
		if s.FanOutOf == "" {
			ids = append(ids, s.ID)
		}
	}
	sort.Strings(ids)
	return partErrorf("the plan has no step %q%s", id, suggest(id, ids))
}

// partSteps is the set of the steps of the part.
func (p *Plan) partSteps(targets, from []string) map[string]bool {
	in := map[string]bool{}
	// whole adds a fan-out's join and items to queue with s.
	var queue []string
	add := func(id string) {
		if !in[id] {
			in[id] = true
			queue = append(queue, id)
		}
	}
	whole := func(s *Step) {
		if s.FanOutOf != "" {
			add(s.FanOutOf)
		}
		if s.FanOut != nil {
			for _, it := range s.FanOut.ItemIDs {
				add(it)
			}
		}
	}
	// Upstream of the targets.
	for _, id := range targets {
		add(id)
	}
	for len(queue) > 0 {
		s := p.Step(queue[0])
		queue = queue[1:]
		if s == nil {
			continue
		}
		whole(s)
		for _, d := range s.Deps {
			add(d)
		}
	}
	// Downstream of the --from steps.
	if len(from) > 0 {
		dependents := p.Dependents()
		down := map[string]bool{}
		var q []string
		push := func(id string) {
			if !down[id] {
				down[id] = true
				q = append(q, id)
			}
		}
		for _, id := range from {
			push(id)
		}
		for len(q) > 0 {
			s := p.Step(q[0])
			q = q[1:]
			if s == nil {
				continue
			}
			if s.FanOutOf != "" {
				push(s.FanOutOf)
			}
			if s.FanOut != nil {
				for _, it := range s.FanOut.ItemIDs {
					push(it)
				}
			}
			for _, d := range dependents[s.ID] {
				push(d)
			}
		}
		for id := range down {
			in[id] = true
		}
	}
	return in
}

// checkPartRefs checks that no step of the part (nor the end step) uses an
// output of a step left out, or reads its status in its condition: the run
// could never give it the value.
//
// With upstream set, p is the part already, and it checks instead that each
// step used is still upstream of its user (upstream(s, id)).
func (p *Plan) checkPartRefs(in map[string]bool, upstream func(s *Step, id string) bool) error {
	check := func(s *Step) error {
		where := fmt.Sprintf("step %q", s.ID)
		if s.Index < 0 {
			where = "the end step"
		}
		out := func(step, ref string) error {
			switch {
			case upstream != nil:
				if s.Index < 0 || p.Step(step) == nil || upstream(s, step) {
					return nil
				}
				return partErrorf("%s uses %s, but in this part step %q is no longer upstream of it (steps between them are left out); add %s to the steps named", where, ref, step, s.ID)
			case p.Step(step) == nil || in[step]:
				return nil
			}
			return partErrorf("%s uses %s, but step %q is left out of the part to run; add %s to the steps named (or start --from it)", where, ref, step, step)
		}
		for _, u := range s.Uses {
			if err := out(u.Step, "{"+u.Name()+"}"); err != nil {
				return err
			}
		}
		if w := s.When; w != nil {
			for _, u := range w.Uses {
				if err := out(u.Step, "steps."+u.Step+".outputs."+u.Key+" in its when:"); err != nil {
					return err
				}
			}
			for _, n := range w.Steps {
				if err := out(n.Name, "steps."+n.Name+" in its when:"); err != nil {
					return err
				}
			}
		}
		// Its handlers' templates: the on_failure command and args, and
		// the recovery scripts of its failure handler.
		for _, name := range OutputNames(p.HandlerTemplates(s)...) {
			if step, _, ok := subst.OutputRef(name); ok {
				if err := out(step, "{"+name+"} in its handling of failures"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, s := range p.Steps {
		if (in != nil && !in[s.ID]) || s.FanOutOf != "" {
			continue // an item's templates are its fan-out's
		}
		if err := check(s); err != nil {
			return err
		}
	}
	if p.End != nil {
		return check(p.End)
	}
	return nil
}

// part is the plan of the steps in in.
func (p *Plan) part(in map[string]bool) *Plan {
	np := *p
	np.Steps = make([]*Step, 0, len(in))
	np.byID = make(map[string]*Step, len(in))
	keep := func(ids []string) []string {
		out := make([]string, 0, len(ids))
		for _, id := range ids {
			if in[id] {
				out = append(out, id)
			}
		}
		return out
	}
	copies := make(map[*Step]*Step, len(in))
	for _, s := range p.Steps {
		if !in[s.ID] {
			continue
		}
		c := *s
		c.Index = len(np.Steps)
		if c.Deps != nil {
			c.Deps = keep(s.Deps)
		}
		if s.FanOut != nil {
			fo := *s.FanOut
			fo.Needs = keep(fo.Needs)
			// The items are all in the part: the join needs what is left
			// of its own needs, then them (ItemIDs its deps' tail).
			c.Deps, fo.ItemIDs = joinDeps(fo.Needs, append([]string(nil), fo.ItemIDs...))
			c.FanOut = &fo
		}
		copies[s] = &c
		np.Steps = append(np.Steps, &c)
		np.byID[c.ID] = &c
	}
	np.Phases = nil
	for _, ph := range p.Phases {
		var steps []*Step
		for _, s := range ph.Steps {
			if c := copies[s]; c != nil {
				steps = append(steps, c)
			}
		}
		if len(steps) > 0 {
			nph := *ph
			nph.Steps = steps
			np.Phases = append(np.Phases, &nph)
		}
	}
	if p.End != nil {
		e := *p.End
		np.End = &e
	}
	return &np
}

// upstreamOf reports whether step id is upstream of step s (a fan-out's
// join: of its items), directly or not. One search: only a part made of
// both STEPs and --from asks.
func (p *Plan) upstreamOf(s *Step, id string) bool {
	seen := map[string]bool{}
	queue := append([]string(nil), s.Deps...)
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if d == id {
			return true
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		if x := p.Step(d); x != nil {
			queue = append(queue, x.Deps...)
		}
	}
	return false
}
