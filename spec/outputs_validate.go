package spec

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/faber-run/faber/spec/subst"
)

// Validation of output references {steps.ID.outputs.KEY}: a template may
// use the outputs of a step that the step it belongs to depends on, directly
// or not. The references are collected as the steps are checked and checked
// once every step and every dependency is known (checkOutputUses).

// refUse is what an output reference is in the template being checked.
type refUse int

const (
	// refsNone: outputs cannot be used here (a cached step's inputs:,
	// outputs: and cache_key:).
	refsNone refUse = iota
	// refsPlanEnv: the plan's env, which is every step's.
	refsPlanEnv
	// refsCommands: a commands: entry, shared by the steps that run it.
	refsCommands
	// refsLater: a failure handler's recovery script, checked for each
	// step that uses the handler (checkRecovery).
	refsLater
	// refsAttempt: a template of the step's attempts (run, env, dir, a
	// plan: step's context): checked, and in the step's Uses.
	refsAttempt
	// refsHandler: the step's on_failure command or args: checked only.
	refsHandler
)

// outputUse is an output reference of a template of step.
type outputUse struct {
	step  *Step
	ref   OutputRef
	pos   Pos    // of the reference's {
	where string // how messages name the template: step "b", step "b": on_failure, ...
	// status: a condition (when:) reads the step's status, which every
	// step has (ref.Key is ""); name is how messages name the reference.
	status bool
	name   string
}

// label is how messages name the reference.
func (u outputUse) label() string {
	if u.name != "" {
		return u.name
	}
	return "{" + u.ref.Name() + "}"
}

// outputRef records (or rejects) an output reference of a template.
func (b *builder) outputRef(ref OutputRef, pos Pos, where string, use refUse) {
	name := ref.Name()
	switch {
	case use == refsLater:
		return
	case use == refsPlanEnv:
		b.errorf(pos, "%s: {%s}: the plan's env is every step's and cannot use step outputs; set it in the env: of the steps that need it", where, name)
		return
	case use == refsCommands:
		b.errorf(pos, "%s: {%s}: a commands: entry cannot use step outputs; use it in the run: line of the step (as an argument of the command)", where, name)
		return
	case use == refsNone || b.consumer == nil:
		b.errorf(pos, "%s: {%s}: step outputs cannot be used here (only in run, env, dir, a plan: step's context, on_failure and recovery scripts)", where, name)
		return
	}
	s := b.consumer
	if use == refsAttempt {
		if i := indexRef(s.Uses, ref); i < 0 {
			s.Uses = append(s.Uses, ref)
			b.usesPos = append(b.usesPos, pos)
		} else if posBefore(pos, b.usesPos[i]) {
			b.usesPos[i] = pos
		}
	}
	b.outputUses = append(b.outputUses, outputUse{step: s, ref: ref, pos: pos, where: where})
}

// sortUses puts the Uses of step s, the step just checked, in the order
// they are written in the plan (its templates are checked run first).
func (b *builder) sortUses(s *Step) {
	pos := b.usesPos
	b.usesPos = nil
	if len(pos) != len(s.Uses) || len(pos) < 2 {
		return
	}
	sort.Stable(usesByPos{s.Uses, pos})
}

type usesByPos struct {
	uses []OutputRef
	pos  []Pos
}

func (u usesByPos) Len() int           { return len(u.uses) }
func (u usesByPos) Less(i, j int) bool { return posBefore(u.pos[i], u.pos[j]) }
func (u usesByPos) Swap(i, j int) {
	u.uses[i], u.uses[j] = u.uses[j], u.uses[i]
	u.pos[i], u.pos[j] = u.pos[j], u.pos[i]
}

func indexRef(refs []OutputRef, r OutputRef) int {
	for i, x := range refs {
		if x == r {
			return i
		}
	}
	return -1
}

func posBefore(a, b Pos) bool { return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col }

// recoveryRefs records the output references of a recovery script for the
// step being checked, which runs it.
func (b *builder) recoveryRefs(s *str, refs []subst.NameRef, where string) {
	seen := map[string]bool{}
	for _, ref := range refs {
		step, key, ok := subst.OutputRef(ref.Name)
		if !ok || seen[ref.Name] {
			continue
		}
		seen[ref.Name] = true
		b.outputRef(OutputRef{Step: step, Key: key}, b.varPos(s, ref), where, refsHandler)
	}
}

// checkOutputUses checks that each output reference names a step that runs
// a process (not a fan-out, a plan: step or the end step) and that the step
// whose template it is depends on it, directly or not; the end step may use
// any step's. The steps are the plan's as written (a fan-out step is its
// template, whose dependencies are its items'). Nothing is checked when the
// dependencies have a cycle (already an error).
func (b *builder) checkOutputUses() {
	uses := b.outputUses
	b.outputUses = nil
	if len(uses) == 0 || b.cyclic {
		return
	}
	pl := b.plan
	ids := make(map[string]*Step, len(pl.Steps))
	for _, s := range pl.Steps {
		if _, dup := ids[s.ID]; !dup && s.ID != "" {
			ids[s.ID] = s
		}
	}
	direct := depSets{}
	var far []outputUse // producer valid, not a direct dependency
	suggested := 0
	for _, u := range uses {
		c, id := u.step, u.ref.Step
		p := ids[id]
		head := fmt.Sprintf("%s: %s:", u.where, u.label())
		switch {
		case u.status && id == c.ID:
			b.errorf(u.pos, "%s a step's condition cannot read its own status (it is decided by the condition)", head)
		case u.status && id == "end":
			b.errorf(u.pos, "%s the end step runs last", head)
		case id == "end" && c.Index < 0, id == c.ID:
			b.errorf(u.pos, "%s the step cannot use its own outputs (they are published when it has run)", head)
		case id == "end":
			b.errorf(u.pos, "%s the end step runs last and publishes no outputs", head)
		case p == nil:
			hint := ""
			if suggested++; suggested <= maxSuggested {
				hint = suggest(id, b.sortedIDs(ids))
			}
			b.errorf(u.pos, "%s unknown step %q%s", head, id, hint)
		case u.status:
			switch {
			case c.Index < 0:
			case direct.has(b, c.Deps, id):
			default:
				far = append(far, u)
			}
		case p.FanOut != nil:
			b.errorf(u.pos, "%s step %q is a fan-out; it runs no process and publishes no outputs (its items run)", head, id)
		case p.PlanPath != "" && !slices.Contains(p.ChildOutputs, u.ref.Key):
			if len(p.ChildOutputs) == 0 {
				b.errorf(u.pos, "%s step %q is a plan: step whose plan %s declares no outputs: (a sub-plan publishes what its outputs: names)", head, id, p.Plan)
			} else {
				b.errorf(u.pos, "%s plan %s of step %q declares no output %q in its outputs:%s", head, p.Plan, id, u.ref.Key, suggest(u.ref.Key, p.ChildOutputs))
			}
		case c.Index < 0: // the end step runs after every step
		case direct.has(b, c.Deps, id):
		default:
			far = append(far, u)
		}
	}
	if len(far) == 0 {
		return
	}
	g := newStepGraph(b, ids)
	for i, u := range g.unreachable(b, far, ids) {
		b.notUpstream(g, u, ids, i < maxSuggested)
	}
}

// sortedIDs are the step ids, sorted, for suggestions.
func (b *builder) sortedIDs(ids map[string]*Step) []string {
	if b.knownIDs == nil {
		b.knownIDs = make([]string, 0, len(ids))
		for id := range ids {
			b.knownIDs = append(b.knownIDs, id)
		}
		sort.Strings(b.knownIDs)
	}
	b.ops += len(b.knownIDs)
	return b.knownIDs
}

// notUpstream reports an output reference of step c to a step that c does
// not depend on, and how to fix it.
// Only the first few are looked at the other way round (whether the step
// referenced depends on c), by one search each.
func (b *builder) notUpstream(g *stepGraph, u outputUse, ids map[string]*Step, search bool) {
	c, id := u.step, u.ref.Step
	head := fmt.Sprintf("%s: %s: step %q is not upstream of %q", u.where, u.label(), id, c.ID)
	switch {
	case search && g.reaches(b, c, ids[id]):
		b.errorf(u.pos, "%s: it depends on %q, so it runs after it", head, c.ID)
	case c.NeedsSet:
		b.errorf(u.pos, "%s; add %q to its needs", head, id)
	case len(c.Deps) <= 5:
		// needs: replaces what the phase gives: keep that too.
		b.errorf(u.pos, "%s; add needs: [%s]", head, strings.Join(append(append([]string(nil), c.Deps...), id), ", "))
	default:
		b.errorf(u.pos, "%s; add needs: with %q and the steps it depends on now", head, id)
	}
}

// depSets answers whether a dependency list holds an id: long lists are
// looked up in a set, one per list (the steps of a parallel phase share
// theirs: the whole previous phase).
type depSets map[depKey]map[string]bool

type depKey struct {
	first *string
	n     int
}

func (d depSets) has(b *builder, deps []string, id string) bool {
	if len(deps) <= 8 {
		b.ops += len(deps)
		for _, x := range deps {
			if x == id {
				return true
			}
		}
		return false
	}
	k := depKey{&deps[0], len(deps)}
	set := d[k]
	if set == nil {
		b.ops += len(deps)
		set = make(map[string]bool, len(deps))
		for _, x := range deps {
			set[x] = true
		}
		d[k] = set
	}
	b.ops++
	return set[id]
}

// stepGraph is the plan's dependencies as indexes: each step's dependents,
// and a topological rank (a step's rank is above its dependencies').
type stepGraph struct {
	steps      []*Step
	dependents [][]int32
	rank       []int32
	seen       []int32 // search stamp per step
	stamp      int32
}

func newStepGraph(b *builder, ids map[string]*Step) *stepGraph {
	steps := b.plan.Steps
	n := len(steps)
	g := &stepGraph{steps: steps, dependents: make([][]int32, n), rank: make([]int32, n), seen: make([]int32, n)}
	pending := make([]int32, n)
	for i, s := range steps {
		for _, d := range s.Deps {
			b.ops++
			if p := ids[d]; p != nil {
				g.dependents[p.Index] = append(g.dependents[p.Index], int32(i))
				pending[i]++
			}
		}
	}
	queue := make([]int32, 0, n)
	for i := range pending {
		if pending[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	// Kahn: the order in which steps are peeled is a topological order
	// (the dependencies have no cycle: checkOutputUses runs only then).
	for r := 0; r < len(queue); r++ {
		i := queue[r]
		g.rank[i] = int32(r)
		for _, j := range g.dependents[i] {
			b.ops++
			if pending[j]--; pending[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	return g
}

// unreachable returns the uses whose step does not depend on the step they
// reference. The uses are grouped by the step they reference; from each,
// one search follows its dependents, no further than the highest rank of
// the steps that use it, and stops when all are found.
func (g *stepGraph) unreachable(b *builder, uses []outputUse, ids map[string]*Step) []outputUse {
	type group struct {
		from    int32
		want    map[int32]bool
		maxRank int32
	}
	var order []string
	groups := map[string]*group{}
	for _, u := range uses {
		id := u.ref.Step
		gr := groups[id]
		if gr == nil {
			gr = &group{from: int32(ids[id].Index), want: map[int32]bool{}}
			groups[id] = gr
			order = append(order, id)
		}
		c := int32(u.step.Index)
		gr.want[c] = true
		gr.maxRank = max(gr.maxRank, g.rank[c])
	}
	found := map[string]map[int32]bool{}
	for _, id := range order {
		gr := groups[id]
		hit := map[int32]bool{}
		found[id] = hit
		g.stamp++
		queue := []int32{gr.from}
		g.seen[gr.from] = g.stamp
		for k := 0; k < len(queue) && len(hit) < len(gr.want); k++ {
			for _, j := range g.dependents[queue[k]] {
				b.ops++
				if g.seen[j] == g.stamp || g.rank[j] > gr.maxRank {
					continue
				}
				g.seen[j] = g.stamp
				if gr.want[j] {
					hit[j] = true
				}
				queue = append(queue, j)
			}
		}
	}
	var out []outputUse
	for _, u := range uses {
		if !found[u.ref.Step][int32(u.step.Index)] {
			out = append(out, u)
		}
	}
	return out
}

// reaches reports whether step from is upstream of step to (for a message
// only: one unbounded search).
func (g *stepGraph) reaches(b *builder, from, to *Step) bool {
	if from == nil || to == nil {
		return false
	}
	g.stamp++
	queue := []int32{int32(from.Index)}
	g.seen[from.Index] = g.stamp
	for k := 0; k < len(queue); k++ {
		for _, j := range g.dependents[queue[k]] {
			b.ops++
			if j == int32(to.Index) {
				return true
			}
			if g.seen[j] != g.stamp {
				g.seen[j] = g.stamp
				queue = append(queue, j)
			}
		}
	}
	return false
}

// planOutputs builds the plan's outputs: (what it publishes as a sub-plan):
// templates over its context and its steps' outputs, any step's, as for
// the end step.
func (b *builder) planOutputs(raw *rawPlan) {
	m := &raw.Outputs
	if !m.Set {
		return
	}
	b.plan.Outputs, b.plan.OutputKeys = b.omap(m)
	// The templates are checked as an end step's would be: any step of the
	// plan may be named (they are read when the run has succeeded).
	b.consumer = &Step{Index: -1, StepBody: &StepBody{}}
	defer func() { b.consumer = nil }()
	for i, k := range m.Keys {
		b.checkTemplate(&m.Vals[i], "outputs: "+k.V, false, refsHandler)
	}
}
