package spec

import (
	"sort"
	"strings"
)

// resolveDeps checks ids and needs, and fills Step.Deps (SPEC §2): explicit
// needs replace the implicit dependencies; otherwise a step of a sequential
// phase needs the previous step, and the first step of a phase (every step
// of a parallel phase) needs all steps of the previous phase.
func (b *builder) resolveDeps() {
	pl := b.plan
	ids := make(map[string]*Step, len(pl.Steps))
	for _, s := range pl.Steps {
		if s.ID == "" {
			continue
		}
		if prev, dup := ids[s.ID]; dup {
			b.errorf(s.Pos, "step %q: duplicate id (first at line %d)", s.ID, prev.Pos.Line)
			continue
		}
		ids[s.ID] = s
	}
	// Steps that depend on the whole previous phase share one Deps slice
	// (len == cap, so an append by a caller copies it): a parallel phase
	// after a large phase would otherwise hold phase² strings.
	var prevPhase []string
	for _, ph := range pl.Phases {
		for i, s := range ph.Steps {
			switch {
			case s.NeedsSet:
				s.Deps = b.needs(s, ids)
			case ph.Parallel || i == 0:
				s.Deps = prevPhase
			default:
				s.Deps = []string{ph.Steps[i-1].ID}
			}
		}
		prevPhase = stepIDs(ph.Steps)
	}
	// A phase's gate holds its entry steps: those that need no step of
	// the phase (README "Approval gates").
	for _, ph := range pl.Phases {
		if ph.Approval == nil {
			continue
		}
		in := make(map[string]bool, len(ph.Steps))
		for _, s := range ph.Steps {
			in[s.ID] = true
		}
		for _, s := range ph.Steps {
			s.PhaseGate = true
			for _, d := range s.Deps {
				if in[d] {
					s.PhaseGate = false
					break
				}
			}
		}
	}
}

// maxSuggested is how many unknown needs get a "did you mean" hint.
const maxSuggested = 20

// needs resolves a step's explicit needs into Deps (plan order, no repeats).
func (b *builder) needs(s *Step, ids map[string]*Step) []string {
	written := s.writtenNeeds()
	var deps []*Step
	seen := map[string]bool{}
	items := make([]str, 0, len(s.Needs))
	if written != nil {
		for _, n := range written.Items {
			if n.Set {
				items = append(items, n)
			}
		}
	} else {
		for _, n := range s.Needs {
			items = append(items, str{V: n, Pos: s.Pos})
		}
	}
	for _, item := range items {
		b.ops++
		n, pos := item.V, item.Pos
		d := ids[n]
		if base, key, ok := SplitItemID(n); ok && d == nil {
			bs := ids[base]
			switch {
			case bs == nil:
				b.errorf(pos, "step %q: needs unknown step %q", s.ID, base)
			case bs.FanOut == nil:
				b.errorf(pos, "step %q: needs %s, but step %q does not fan out (foreach: or matrix:)", s.ID, n, base)
			case strings.Contains(key, "{") && s.FanOut == nil:
				b.errorf(pos, "step %q: needs %s; {item} is only known in a fan-out step", s.ID, n)
			case bs.FanOut.Dynamic:
				b.errorf(pos, "step %q: needs %s, but the items of step %q are read only when it runs (foreach: %s); need %q as a whole", s.ID, n, base, bs.FanOut.Kind, base)
			case strings.Contains(key, "{") && s.FanOut.Dynamic:
				b.errorf(pos, "step %q: needs %s; a fan-out over %s: cannot name items by {item} (its items are read only when it runs); need %q as a whole", s.ID, n, s.FanOut.Kind, base)
			default:
				b.itemNeeds[s] = append(b.itemNeeds[s], itemNeed{base: base, tmpl: key, pos: pos})
				if !seen[base] {
					seen[base] = true
					deps = append(deps, bs)
				}
			}
			continue
		}
		if d != nil && d.FanOut != nil {
			if b.plainNeed[s] == nil {
				b.plainNeed[s] = map[string]bool{}
			}
			b.plainNeed[s][n] = true
		}
		switch {
		case n == "end":
			b.errorf(pos, "step %q: needs the end step, which always runs last", s.ID)
			continue
		case d == nil:
			// A suggestion compares the name with every id: only the
			// first few unknown needs get one, so that a plan with
			// thousands of them is not steps × needs.
			hint := ""
			if b.unknownNeeds++; b.unknownNeeds <= maxSuggested {
				if b.knownIDs == nil {
					b.knownIDs = make([]string, 0, len(ids))
					for id := range ids {
						b.knownIDs = append(b.knownIDs, id)
					}
					sort.Strings(b.knownIDs)
				}
				hint = suggest(n, b.knownIDs)
				b.ops += len(b.knownIDs)
			}
			b.errorf(pos, "step %q: needs unknown step %q%s", s.ID, n, hint)
			continue
		case seen[n]:
			continue
		}
		seen[n] = true
		deps = append(deps, d)
	}
	sort.SliceStable(deps, func(i, j int) bool { return deps[i].Index < deps[j].Index })
	out := stepIDs(deps)
	if out == nil {
		out = []string{}
	}
	return out
}

func stepIDs(steps []*Step) []string {
	if len(steps) == 0 {
		return nil
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.ID
	}
	return out
}

// findCycles reports each dependency cycle once, as `cycle: a -> b -> a`
// (each step followed by one it needs), at the earliest step of the cycle.
func (b *builder) findCycles() {
	pl := b.plan
	idx := make(map[string]int, len(pl.Steps))
	for i, s := range pl.Steps {
		if _, dup := idx[s.ID]; !dup && s.ID != "" {
			idx[s.ID] = i
		}
	}
	// Implicit dependencies always point to earlier steps, so a cycle needs
	// an explicit need of a step that is not earlier: without one, there is
	// nothing to search.
	forward := false
	for i, s := range pl.Steps {
		if !s.NeedsSet {
			continue
		}
		for _, d := range s.Deps {
			if j, ok := idx[d]; ok && j >= i {
				forward = true
			}
		}
	}
	if !forward {
		return
	}
	// Peel off steps whose dependencies are all peeled (Kahn); what remains
	// is on a cycle or depends on one.
	n := len(pl.Steps)
	pending := make([]int, n) // unpeeled deps per step
	dependents := make([][]int, n)
	for i, s := range pl.Steps {
		for _, d := range s.Deps {
			if j, ok := idx[d]; ok {
				pending[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	queue := make([]int, 0, n)
	for i := range pending {
		if pending[i] == 0 {
			queue = append(queue, i)
		}
	}
	peeled := make([]bool, n)
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		peeled[i] = true
		for _, j := range dependents[i] {
			pending[j]--
			if pending[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	// From each remaining step, follow unpeeled deps until a step repeats.
	done := make([]bool, n)
	for start := 0; start < n; start++ {
		if peeled[start] || done[start] {
			continue
		}
		var path []int
		at := map[int]int{}
		cur := start
		for {
			if done[cur] {
				break // leads into a cycle already reported
			}
			if k, ok := at[cur]; ok {
				cycle := path[k:]
				for _, c := range cycle {
					done[c] = true
				}
				b.reportCycle(cycle)
				break
			}
			at[cur] = len(path)
			path = append(path, cur)
			next := -1
			for _, d := range pl.Steps[cur].Deps {
				if j, ok := idx[d]; ok && !peeled[j] {
					next = j
					break
				}
			}
			if next < 0 {
				break // unreachable: an unpeeled step has an unpeeled dep
			}
			cur = next
		}
		for _, c := range path {
			done[c] = true
		}
	}
}

// reportCycle reports a cycle, rotated to start at its earliest step.
func (b *builder) reportCycle(cycle []int) {
	first := 0
	for i, c := range cycle {
		if c < cycle[first] {
			first = i
		}
	}
	names := make([]string, 0, len(cycle)+1)
	for i := range cycle {
		names = append(names, b.plan.Steps[cycle[(first+i)%len(cycle)]].ID)
	}
	names = append(names, names[0])
	b.cyclic = true
	s := b.plan.Steps[cycle[first]]
	pos := s.Pos
	if written := s.writtenNeeds(); written != nil {
		pos = written.Pos
	}
	b.errorf(pos, "step %q: %s", s.ID, "cycle: "+strings.Join(names, " -> "))
}

// byID indexes the steps of a built plan.
func (b *builder) byID() {
	m := make(map[string]*Step, len(b.plan.Steps))
	for _, s := range b.plan.Steps {
		if _, dup := m[s.ID]; !dup {
			m[s.ID] = s
		}
	}
	b.plan.byID = m
}

// Step returns the step with the given id, or nil. The end step is not
// included.
func (p *Plan) Step(id string) *Step {
	if p.byID != nil {
		return p.byID[id]
	}
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Dependents maps each step id to the ids of the steps that depend on it
// directly, in plan order.
func (p *Plan) Dependents() map[string][]string {
	out := make(map[string][]string, len(p.Steps))
	for _, s := range p.Steps {
		for _, d := range s.Deps {
			out[d] = append(out[d], s.ID)
		}
	}
	return out
}

// Downstream returns ids and every step that depends on them, directly or
// not, in plan order. Unknown ids are left out.
func (p *Plan) Downstream(ids ...string) []string {
	deps := p.Dependents()
	in := map[string]bool{}
	var queue []string
	for _, id := range ids {
		if p.Step(id) != nil && !in[id] {
			in[id] = true
			queue = append(queue, id)
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, d := range deps[id] {
			if !in[d] {
				in[d] = true
				queue = append(queue, d)
			}
		}
	}
	out := make([]string, 0, len(in))
	for _, s := range p.Steps {
		if in[s.ID] {
			out = append(out, s.ID)
			delete(in, s.ID) // duplicate ids (invalid plans) once
		}
	}
	return out
}
