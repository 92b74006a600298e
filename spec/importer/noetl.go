// NoETL playbooks (apiVersion noetl.io/v2, kind: Playbook) as run locally
// by `noetl run`: shell and playbook tools, next/case routing.

package importer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/faber-run/faber/internal/lazyre"
)

// isNoetl: a top-level workflow: list of steps (mappings with step:) in a
// file that says it is a NoETL playbook (kind: Playbook, or an apiVersion
// noetl.io/...).
func isNoetl(root *yaml.Node) bool {
	_, wf := get(root, "workflow")
	if wf == nil || wf.Kind != yaml.SequenceNode || len(wf.Content) == 0 {
		return false
	}
	for _, s := range wf.Content {
		s = deref(s)
		if s.Kind != yaml.MappingNode {
			return false
		}
		if _, n := get(s, "step"); n == nil {
			return false
		}
	}
	_, kind := get(root, "kind")
	_, api := get(root, "apiVersion")
	return (kind != nil && kind.Kind == yaml.ScalarNode && kind.Value == "Playbook") ||
		(api != nil && api.Kind == yaml.ScalarNode && strings.HasPrefix(api.Value, "noetl.io/"))
}

// noetlStep is one step of the workflow: list.
type noetlStep struct {
	name  string
	id    string
	node  *yaml.Node // the step's mapping
	nameN *yaml.Node
	desc  *yaml.Node
	guard string // the step's own when:, translated ("" = none)
	tool  *yaml.Node
	toolK *yaml.Node
	arcs  []noetlArc // what fires after it, in file order
	order [][2]int   // indexes into arcs: the second target runs after the first
	in    []noetlArc // arcs into it (reachable sources only)
	after []noetlArc // steps listed before it in a list of targets: needs, not arcs
	keep  bool       // reachable from the entry step
	skip  bool       // the faber step has a when: (skippable)
}

// noetlArc is a transition to step to, fired (once its source succeeded)
// when cond holds ("" = always).
type noetlArc struct {
	from *noetlStep
	to   string
	at   *yaml.Node // the target's name node
	cond string
}

// noetl converts a NoETL playbook.
func (c *conv) noetl(root *yaml.Node) *yaml.Node {
	out := newMap(root)
	var (
		meta, workload, workflow, executor field
	)
	for _, f := range c.fields(root, "playbook") {
		switch f.key {
		case "apiVersion":
			if s, ok := c.str(f.v, "apiVersion"); ok && s != "noetl.io/v2" && s != "noetl.io/v1" {
				c.warnf(f.v, "apiVersion %q: read as noetl.io/v2", s)
			}
		case "kind":
			if s, ok := c.str(f.v, "kind"); ok && s != "Playbook" {
				c.errorf(f.v, "kind %q: faber import noetl converts a Playbook", s)
			}
		case "metadata":
			meta = f
		case "workload":
			workload = f
		case "workflow":
			workflow = f
		case "executor":
			executor = f
		case "workbook":
			c.errorf(f.k, "workbook: not supported: faber import noetl converts shell and playbook tools written in the steps")
		case "keychain":
			c.errorf(f.k, "keychain: not supported: faber has no credential store (use secrets: and --set)")
		default:
			c.errorf(f.k, "unknown NoETL playbook field %q: no faber equivalent", f.key)
		}
	}
	c.noetlMeta(root, meta, out)
	set(out, nil, "shell", newStr(root, "bash"))
	if workload.v != nil {
		if ctx := c.noetlWorkload(workload); len(ctx.Content) > 0 {
			set(out, workload.k, "context", ctx)
		}
	}
	entry := c.noetlExecutor(executor)
	steps := c.noetlSteps(workflow.v)
	if steps == nil {
		return out
	}
	seq := c.noetlGraph(steps, entry, workflow.v)
	if seq != nil {
		set(out, workflow.k, "steps", seq)
	}
	return out
}

func (c *conv) noetlMeta(root *yaml.Node, meta field, out *yaml.Node) {
	if meta.v == nil {
		c.errorf(root, "missing required field \"metadata\" (with name)")
		return
	}
	var name, desc field
	for _, f := range c.fields(meta.v, "metadata") {
		switch f.key {
		case "name":
			name = f
		case "description":
			desc = f
		case "path", "version", "labels", "annotations", "tags", "author":
			c.warnf(f.k, "metadata: %s: dropped (catalog information)", f.key)
		default:
			c.errorf(f.k, "metadata: unknown field %q: no faber equivalent", f.key)
		}
	}
	if name.v == nil {
		c.errorf(meta.v, "metadata: missing required field \"name\"")
	} else if s, ok := c.str(name.v, "metadata: name"); ok {
		set(out, name.k, "name", newStr(name.v, s))
	}
	if desc.v != nil {
		if s, ok := c.str(desc.v, "metadata: description"); ok {
			set(out, desc.k, "description", newStr(desc.v, s))
		}
	}
}

// noetlWorkload: the workload's scalars become context values (strings,
// as noetl run renders them); nested values are left out.
func (c *conv) noetlWorkload(wl field) *yaml.Node {
	ctx := newMap(wl.v)
	if wl.v.Kind != yaml.MappingNode {
		c.errorf(wl.v, "workload: must be a mapping, not %s", kindName(wl.v))
		return ctx
	}
	for i := 0; i+1 < len(wl.v.Content); i += 2 {
		f := field{key: wl.v.Content[i].Value, k: wl.v.Content[i], v: deref(wl.v.Content[i+1])}
		if isNull(f.v) { // noetl run renders it as text too: empty here
			f.v = newStr(f.v, "")
		}
		if !ctxKeyRe().MatchString(f.key) {
			c.errorf(f.k, "workload: key %q: a faber context key is [a-z_][a-z0-9_]*", f.key)
			continue
		}
		if f.v.Kind != yaml.ScalarNode {
			c.warnf(f.k, "workload: %s: left out (%s; faber context values are strings)", f.key, kindName(f.v))
			continue
		}
		set(ctx, f.k, f.key, newStr(f.v, f.v.Value))
	}
	return ctx
}

// noetlExecutor returns the entry step executor.spec names ("" = none).
func (c *conv) noetlExecutor(ex field) string {
	if ex.v == nil {
		return ""
	}
	entry := ""
	for _, f := range c.fields(ex.v, "executor") {
		switch f.key {
		case "profile":
			if s, ok := c.str(f.v, "executor: profile"); ok && s == "distributed" {
				c.errorf(f.v, "executor: profile: distributed: faber import noetl converts playbooks that noetl run executes locally")
			}
		case "version", "requires":
			c.warnf(f.k, "executor: %s: dropped (faber checks what the playbook uses itself)", f.key)
		case "spec":
			for _, g := range c.fields(f.v, "executor: spec") {
				switch g.key {
				case "entry_step":
					if s, ok := c.str(g.v, "executor: spec: entry_step"); ok {
						entry = s
					}
				default:
					c.errorf(g.k, "executor: spec: %s: not supported by faber import noetl", g.key)
				}
			}
		default:
			c.errorf(f.k, "executor: unknown field %q: no faber equivalent", f.key)
		}
	}
	return entry
}

var (
	ctxKeyRe = lazyre.New(`^[a-z_][a-z0-9_]*$`)
	// a {{ ... }} template, or a Jinja {% %} / {# #} block
	jinjaRe = lazyre.New(`\{\{(.*?)\}\}|\{%.*?%\}|\{#.*?#\}`)
	// workload.NAME, or NAME (noetl run sets --set values under both)
	varRe = lazyre.New(`^(?:workload\.)?([A-Za-z_][A-Za-z0-9_]*)$`)
)

// noetlSteps reads the workflow: list.
func (c *conv) noetlSteps(wf *yaml.Node) []*noetlStep {
	if wf == nil {
		return nil
	}
	var steps []*noetlStep
	seen := map[string]*noetlStep{}
	ids := map[string]*noetlStep{}
	for _, sn := range wf.Content {
		sn = deref(sn)
		st := &noetlStep{node: sn}
		for _, f := range c.fields(sn, "step") {
			if f.key == "step" {
				if s, ok := c.str(f.v, "step"); ok {
					st.name, st.nameN = s, f.v
				}
			}
		}
		if st.nameN == nil {
			continue
		}
		if prev := seen[st.name]; prev != nil {
			c.errorf(st.nameN, "step %q: defined twice (first at line %d)", st.name, prev.nameN.Line)
			continue
		}
		seen[st.name] = st
		if st.name != "end" {
			st.id = sanitizeID(st.name)
			if st.id == "" || st.id == "end" {
				c.errorf(st.nameN, "step %q: no faber step id can be made of this name", st.name)
				continue
			}
			if prev := ids[st.id]; prev != nil {
				c.errorf(st.nameN, "step %q: its faber id %q is also that of step %q", st.name, st.id, prev.name)
				continue
			}
			ids[st.id] = st
		}
		steps = append(steps, st)
	}
	for _, st := range steps {
		c.noetlStepFields(st)
	}
	return steps
}

// noetlStepFields reads one step's fields and the arcs out of it.
func (c *conv) noetlStepFields(st *noetlStep) {
	where := fmt.Sprintf("step %q", st.name)
	var nextF, caseF, specF field
	for _, f := range c.fields(st.node, where) {
		switch f.key {
		case "step":
		case "desc", "description":
			st.desc = f.v
		case "tool":
			st.tool, st.toolK = f.v, f.k
		case "when":
			if s, ok := c.str(f.v, where+": when"); ok {
				st.guard = c.noetlCond(s, f.v, where+": when")
			}
		case "next":
			nextF = f
		case "case":
			caseF = f
		case "spec":
			specF = f
		case "type":
			if f.v.Kind == yaml.ScalarNode && (f.v.Value == "start" || f.v.Value == "end") {
				continue
			}
			c.errorf(f.k, "%s: type: %s: not supported (faber import noetl converts tool: kind: shell and kind: playbook)", where, kindName(f.v))
		case "vars":
			c.errorf(f.k, "%s: vars: not supported: it reads step results, which faber import noetl does not convert (publish values with $FABER_OUTPUTS)", where)
		case "loop":
			c.errorf(f.k, "%s: loop: not supported by faber import noetl (faber's fan-out is foreach:)", where)
		case "sink", "retry", "args", "pipe", "set":
			c.errorf(f.k, "%s: %s: not supported by faber import noetl", where, f.key)
		default:
			c.errorf(f.k, "%s: unknown NoETL step field %q: no faber equivalent", where, f.key)
		}
	}
	exclusive := false
	if specF.v != nil {
		for _, g := range c.fields(specF.v, where+": spec") {
			if g.key != "next_mode" {
				c.errorf(g.k, "%s: spec: %s: not supported by faber import noetl", where, g.key)
				continue
			}
			exclusive = c.noetlMode(g.v, where+": spec: next_mode", false)
		}
	}
	if st.name == "end" {
		if st.tool != nil {
			c.warnf(st.toolK, "step \"end\": tool: dropped (noetl run runs nothing at the end step)")
		}
		if nextF.v != nil || caseF.v != nil {
			c.warnf(st.nameN, "step \"end\": next/case: dropped (the workflow ends at the end step)")
		}
		return
	}
	var noThen []string // negations of the case whens that were evaluated
	if caseF.v != nil {
		noThen = c.noetlCase(st, caseF.v, where)
	}
	if nextF.v != nil {
		c.noetlNext(st, nextF.v, where+": next", noThen, exclusive)
	}
}

// noetlMode reads exclusive|inclusive.
func (c *conv) noetlMode(n *yaml.Node, where string, def bool) bool {
	s, ok := c.str(n, where)
	switch {
	case !ok:
	case s == "exclusive":
		return true
	case s == "inclusive":
		return false
	default:
		c.errorf(n, "%s: %q: must be exclusive or inclusive", where, s)
	}
	return def
}

// maxArcWork bounds the arcs of a playbook and the text of their
// conditions (in units of 64 bytes): 1,000,000 arcs, or 64 MiB.
const maxArcWork = 1 << 20

// maxExclusive bounds the entries of a case and the arcs of an exclusive
// next: the conditions written grow with the square of their number.
const maxExclusive = 1000

// noetlCase reads case: [{when, then, else}]: noetl run takes the first
// entry whose when holds (its then fires), or, at the first entry with an
// else whose when does not hold, that else, and stops. It returns the
// negated conditions of the entries evaluated: next: fires only when no
// then did.
func (c *conv) noetlCase(st *noetlStep, n *yaml.Node, where string) []string {
	if n.Kind != yaml.SequenceNode {
		c.errorf(n, "%s: case: must be a list of {when, then, else}, not %s", where, kindName(n))
		return nil
	}
	if len(n.Content) > maxExclusive {
		c.errorf(n, "%s: case: %d entries: at most %d (each entry's condition holds the negation of every entry before it)", where, len(n.Content), maxExclusive)
		return nil
	}
	var prior []string // not(when) of the entries before
	for i, en := range n.Content {
		en = deref(en)
		w := fmt.Sprintf("%s: case %d", where, i+1)
		var whenF, thenF, elseF field
		for _, f := range c.fields(en, w) {
			switch f.key {
			case "when":
				whenF = f
			case "then":
				thenF = f
			case "else":
				elseF = f
			case "rhai", "when_rhai":
				c.errorf(f.k, "%s: %s: a Rhai condition cannot be translated (write when: \"{{ workload.x }} == value\")", w, f.key)
			default:
				c.errorf(f.k, "%s: unknown field %q (case takes when, then, else)", w, f.key)
			}
		}
		if whenF.v == nil {
			c.errorf(en, "%s: missing when:", w)
			continue
		}
		s, ok := c.str(whenF.v, w+": when")
		if !ok {
			continue
		}
		cond := c.noetlCond(s, whenF.v, w+": when")
		if thenF.v != nil {
			c.noetlTargets(st, thenF.v, w+": then", and(append(append([]string{}, prior...), cond)...), true)
		}
		neg := not(cond)
		prior = append(prior, neg)
		if elseF.v != nil {
			c.noetlTargets(st, elseF.v, w+": else", and(prior...), false)
			if i+1 < len(n.Content) {
				c.warnf(deref(n.Content[i+1]), "%s: case %d and after: dropped (noetl run stops at the first case with an else)", where, i+2)
			}
			break
		}
	}
	return prior
}

// noetlTargets reads a then/else block: a list of {step, when}, or (then)
// a mapping {next: ...}. Every entry fires (under base and its own when).
func (c *conv) noetlTargets(st *noetlStep, n *yaml.Node, where, base string, mappingOK bool) {
	if n.Kind == yaml.MappingNode && mappingOK {
		for _, f := range c.fields(n, where) {
			if f.key != "next" {
				c.errorf(f.k, "%s: %s: not supported by faber import noetl (then takes a list of steps, or next:)", where, f.key)
				continue
			}
			if f.v.Kind == yaml.MappingNode {
				c.noetlArc(st, f.v, where+": next", base, nil)
			} else {
				c.noetlNext(st, f.v, where+": next", nil, false, base)
			}
		}
		return
	}
	if n.Kind != yaml.SequenceNode {
		c.errorf(n, "%s: must be a list of {step: NAME}, not %s", where, kindName(n))
		return
	}
	prev := -1
	for _, it := range n.Content {
		before := len(st.arcs)
		c.noetlArc(st, deref(it), where, base, nil)
		prev = st.inOrder(prev, before)
	}
}

// noetlNext reads next: — a list of {step, when} (every entry whose when
// holds fires; spec: next_mode: exclusive on the step: only the first), or
// the router {spec: {mode}, arcs: [{step, when}]} (exclusive by default).
// noThen: the step's case whens, all of which must be false.
func (c *conv) noetlNext(st *noetlStep, n *yaml.Node, where string, noThen []string, exclusive bool, extra ...string) {
	base := and(append(append([]string{}, noThen...), extra...)...)
	var arcs []*yaml.Node
	switch n.Kind {
	case yaml.SequenceNode:
		arcs = n.Content
	case yaml.MappingNode:
		exclusive = true
		var arcsF field
		for _, f := range c.fields(n, where) {
			switch f.key {
			case "spec":
				for _, g := range c.fields(f.v, where+": spec") {
					if g.key != "mode" {
						c.errorf(g.k, "%s: spec: %s: not supported by faber import noetl", where, g.key)
						continue
					}
					exclusive = c.noetlMode(g.v, where+": spec: mode", true)
				}
			case "arcs":
				arcsF = f
			default:
				c.errorf(f.k, "%s: unknown field %q (next takes spec and arcs)", where, f.key)
			}
		}
		if arcsF.v == nil {
			return
		}
		if arcsF.v.Kind != yaml.SequenceNode {
			c.errorf(arcsF.v, "%s: arcs: must be a list of {step, when}, not %s", where, kindName(arcsF.v))
			return
		}
		arcs, where = arcsF.v.Content, where+": arcs"
	default:
		c.errorf(n, "%s: must be a list of {step: NAME}, or {spec, arcs}, not %s", where, kindName(n))
		return
	}
	if exclusive && len(arcs) > maxExclusive {
		c.errorf(n, "%s: %d exclusive arcs: at most %d (each arc's condition holds the negation of every arc before it)", where, len(arcs), maxExclusive)
		return
	}
	var prior []string // exclusive: not(when) of the arcs before
	prev := -1
	for i, an := range arcs {
		an = deref(an)
		before := len(st.arcs)
		cond := c.noetlArc(st, an, where, base, prior)
		if c.tooBig {
			return
		}
		if !exclusive {
			prev = st.inOrder(prev, before)
			continue
		}
		if cond == "" { // an arc that always fires: the arcs after it never do
			if i+1 < len(arcs) {
				c.warnf(deref(arcs[i+1]), "%s: arcs after an arc without when: dropped (exclusive: the first arc that holds fires)", where)
			}
			break
		}
		prior = append(prior, not(cond))
	}
}

// inOrder records that the arc just read (if one was, at index before)
// comes after arc prev of the same list: noetl run runs the targets of one
// list one after the other, in the order listed. It returns the index of
// the list's latest arc.
func (st *noetlStep) inOrder(prev, before int) int {
	if len(st.arcs) == before {
		return prev
	}
	if prev >= 0 {
		st.order = append(st.order, [2]int{prev, before})
	}
	return before
}

// noetlArc reads {step: NAME, when: COND} and records the arc, firing under
// base, the arcs before (prior) and its own when. It returns its own when.
func (c *conv) noetlArc(st *noetlStep, n *yaml.Node, where, base string, prior []string) string {
	if c.tooBig {
		return ""
	}
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		c.errorf(n, "%s: %s: write {step: %s}", where, kindName(n), n.Value)
		return ""
	}
	var to, at *yaml.Node
	cond := ""
	for _, f := range c.fields(n, where) {
		switch f.key {
		case "step":
			to = f.v
		case "when":
			if s, ok := c.str(f.v, where+": when"); ok {
				cond = c.noetlCond(s, f.v, where+": when")
				if cond == "" {
					cond = "true"
				}
			}
		case "args":
			c.errorf(f.k, "%s: args: not supported: faber has no per-arc values (use workload values)", where)
		case "then", "next":
			c.errorf(f.k, "%s: a nested %s: is not supported by faber import noetl (write {step, when})", where, f.key)
		default:
			c.errorf(f.k, "%s: unknown field %q (an arc takes step and when)", where, f.key)
		}
	}
	if to == nil {
		if n.Kind == yaml.MappingNode {
			c.errorf(n, "%s: missing step:", where)
		}
		return cond
	}
	name, ok := c.str(to, where+": step")
	if !ok {
		return cond
	}
	at = to
	parts := append([]string{base}, prior...)
	if cond != "true" {
		parts = append(parts, cond)
	}
	full := and(parts...)
	// YAML aliases can make one list of arcs every step's: bound the work.
	if c.cloned += 1 + len(full)/64; c.cloned > maxArcWork {
		c.tooBig = true
		c.errorf(n, "%s: too many arcs, or conditions too long (YAML aliases repeating a list of arcs?)", where)
		return ""
	}
	st.arcs = append(st.arcs, noetlArc{from: st, to: name, at: at, cond: full})
	if cond == "true" {
		return ""
	}
	return cond
}

// noetlGraph turns the steps and arcs into faber steps: the entry step
// needs nothing; every other step reached from it needs the steps with an
// arc into it and runs when one of those arcs fires.
func (c *conv) noetlGraph(steps []*noetlStep, entry string, wf *yaml.Node) *yaml.Node {
	byName := map[string]*noetlStep{}
	for _, st := range steps {
		byName[st.name] = st
	}
	var first *noetlStep
	switch {
	case entry != "":
		first = byName[entry]
		if first == nil {
			c.errorf(wf, "executor: spec: entry_step %q: no such step", entry)
			return nil
		}
	case byName["start"] != nil:
		first = byName["start"]
	default:
		first = steps[0]
	}
	if first.name == "end" {
		c.errorf(first.nameN, "the entry step is the end step: nothing runs")
		return nil
	}
	// Reachable steps, in order of discovery; unknown targets are errors.
	first.keep = true
	queue := []*noetlStep{first}
	unknown := 0
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		for _, a := range st.arcs {
			t := byName[a.to]
			if t == nil {
				hint := ""
				if unknown++; unknown <= 20 { // a did-you-mean compares with every step
					hint = suggestName(a.to, byName)
				}
				c.errorf(a.at, "step %q: next step %q: no such step%s", st.name, a.to, hint)
				continue
			}
			if t.name == "end" {
				continue
			}
			t.in = append(t.in, a)
			if !t.keep {
				t.keep = true
				queue = append(queue, t)
			}
		}
	}
	for _, st := range steps {
		if !st.keep {
			continue
		}
		for _, o := range st.order {
			a, b := st.arcs[o[0]], st.arcs[o[1]]
			x, y := byName[a.to], byName[b.to]
			if x == nil || y == nil || x == y || x.name == "end" || y.name == "end" {
				continue
			}
			y.after = append(y.after, noetlArc{from: x, to: y.name, at: b.at})
		}
	}
	memo := map[*noetlStep]int{}
	for _, st := range steps {
		if st.keep {
			st.skip = skippable(st, first, memo)
		}
	}
	seq := newSeq(wf, false)
	for _, st := range steps {
		if st.name == "end" {
			continue
		}
		if !st.keep {
			c.warnf(st.nameN, "step %q: left out: no next or case leads to it from the entry step %q", st.name, first.name)
			continue
		}
		seq.Content = append(seq.Content, c.noetlStepNode(st, st == first))
	}
	return seq
}

// suggestName says did-you-mean for a step name, when one is close.
func suggestName(name string, byName map[string]*noetlStep) string {
	best, bestD := "", 3
	for n := range byName {
		if d := editDistance(name, n); d < bestD || (d == bestD && best != "" && n < best) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// noetlStepNode writes one faber step.
func (c *conv) noetlStepNode(st *noetlStep, entry bool) *yaml.Node {
	s := newMap(st.node)
	set(s, st.nameN, "id", newStr(st.nameN, st.id))
	if st.id != st.name {
		set(s, st.nameN, "name", newStr(st.nameN, st.name))
	}
	if st.desc != nil {
		if d, ok := c.str(st.desc, fmt.Sprintf("step %q: desc", st.name)); ok {
			set(s, st.desc, "description", newStr(st.desc, d))
		}
	}
	needs := newSeq(st.nameN, true)
	seen := map[*noetlStep]bool{}
	var ors []string
	always := false
	for _, a := range st.in {
		if !seen[a.from] {
			seen[a.from] = true
			needs.Content = append(needs.Content, newStr(a.at, a.from.id))
		}
		term := a.cond
		if a.from.skip {
			term = and(fmt.Sprintf("%s.status == \"success\"", stepRef(a.from.id)), term)
		}
		if term == "" {
			always = true
		}
		ors = append(ors, term)
	}
	for _, a := range st.after {
		if !seen[a.from] {
			seen[a.from] = true
			needs.Content = append(needs.Content, newStr(a.at, a.from.id))
		}
	}
	set(s, st.nameN, "needs", needs)
	when := ""
	if !entry && !always {
		when = or(ors...)
	}
	when = and(when, st.guard)
	if when != "" {
		set(s, st.nameN, "when", newStr(st.nameN, when))
	}
	c.noetlTool(st, s)
	return s
}

// skippable marks the steps that get a when: (so may be skipped): one
// with a guard, or, but for the entry step, one that no arc reaches
// unconditionally from a step that cannot be skipped. Their dependents
// test that they ran. Memoized: a step is decided once.
func skippable(st *noetlStep, entry *noetlStep, memo map[*noetlStep]int) bool {
	switch memo[st] {
	case 1: // on a cycle (faber rejects it): say yes
		return true
	case 2:
		return true
	case 3:
		return false
	}
	memo[st] = 1
	res := st.guard != ""
	if !res && st != entry {
		res = true
		for _, a := range st.in {
			if a.cond == "" && !skippable(a.from, entry, memo) {
				res = false
				break
			}
		}
	}
	if res {
		memo[st] = 2
	} else {
		memo[st] = 3
	}
	return res
}

// stepRef names a step in a condition.
func stepRef(id string) string {
	if strings.ContainsAny(id, "-.") {
		return "steps[" + strconv.Quote(id) + "]"
	}
	return "steps." + id
}

// noetlTool writes run: or plan: + context: from the step's tool.
func (c *conv) noetlTool(st *noetlStep, s *yaml.Node) {
	where := fmt.Sprintf("step %q: tool", st.name)
	if st.tool == nil {
		set(s, st.nameN, "run", newStr(st.nameN, "true"))
		return
	}
	if st.tool.Kind == yaml.SequenceNode {
		c.errorf(st.tool, "%s: a list of tools (a pipeline) is not supported by faber import noetl", where)
		return
	}
	var kind, cmds, path, args field
	var others []field
	for _, f := range c.fields(st.tool, where) {
		switch f.key {
		case "kind":
			kind = f
		case "cmds":
			cmds = f
		case "path":
			path = f
		case "args":
			args = f
		default:
			others = append(others, f)
		}
	}
	if kind.v == nil {
		if st.tool.Kind == yaml.MappingNode {
			c.errorf(st.tool, "%s: missing kind:", where)
		}
		return
	}
	k, ok := c.str(kind.v, where+": kind")
	if !ok {
		return
	}
	switch k {
	case "shell":
		for _, f := range append(others, path, args) {
			if f.k != nil {
				c.errorf(f.k, "%s: %s: not a field of kind: shell (it takes cmds)", where, f.key)
			}
		}
		if cmds.v == nil {
			c.errorf(kind.k, "%s: kind: shell without cmds", where)
			return
		}
		if run, ok := c.noetlCmds(cmds.v, where+": cmds"); ok {
			set(s, cmds.k, "run", newStr(cmds.v, run))
		}
	case "playbook":
		for _, f := range append(others, cmds) {
			if f.k != nil {
				c.errorf(f.k, "%s: %s: not a field of kind: playbook (it takes path and args)", where, f.key)
			}
		}
		if path.v == nil {
			c.errorf(kind.k, "%s: kind: playbook without path", where)
			return
		}
		p, ok := c.str(path.v, where+": path")
		if !ok {
			return
		}
		if strings.Contains(p, "{{") || strings.Contains(p, "{%") {
			c.errorf(path.v, "%s: path: a template cannot be translated (faber loads sub-plans when it validates)", where)
			return
		}
		set(s, path.k, "plan", newStr(path.v, p))
		if args.v != nil {
			ctx := newMap(args.v)
			for _, f := range c.fields(args.v, where+": args") {
				if !ctxKeyRe().MatchString(f.key) {
					c.errorf(f.k, "%s: args: key %q: a faber context key is [a-z_][a-z0-9_]*", where, f.key)
					continue
				}
				if f.v.Kind != yaml.ScalarNode {
					c.errorf(f.v, "%s: args: %s: must be a string, not %s", where, f.key, kindName(f.v))
					continue
				}
				if v, ok := c.noetlTemplate(f.v.Value, f.v, where+": args: "+f.key); ok {
					set(ctx, f.k, f.key, newStr(f.v, v))
				}
			}
			if len(ctx.Content) > 0 {
				set(s, args.k, "context", ctx)
			}
		}
	default:
		c.errorf(kind.v, "%s: kind %q: not supported by faber import noetl (it converts kind: shell and kind: playbook)", where, k)
	}
}

// noetlCmds turns cmds (a string: one command a line; or a list) into a
// run: script. noetl run runs each command with its own bash -c and stops
// at the first that fails: each runs in a subshell, followed by || exit.
func (c *conv) noetlCmds(n *yaml.Node, where string) (string, bool) {
	var cmds []string
	ok := true
	add := func(s string, at *yaml.Node) {
		t, good := c.noetlTemplate(s, at, where)
		if !good {
			ok = false
			return
		}
		if t = strings.TrimSpace(t); t != "" {
			cmds = append(cmds, t)
		}
	}
	if n.Kind == yaml.ScalarNode {
		for _, l := range strings.Split(n.Value, "\n") {
			add(l, n)
		}
	} else {
		for _, it := range c.strList(n, where) {
			add(it.Value, it)
		}
	}
	if !ok {
		return "", false
	}
	if len(cmds) == 0 {
		c.errorf(n, "%s: no command", where)
		return "", false
	}
	if len(cmds) == 1 {
		return cmds[0], true
	}
	var b strings.Builder
	for i, cmd := range cmds {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.ContainsAny(cmd, "#\n") || strings.Contains(cmd, "<<") || strings.HasSuffix(cmd, "\\") {
			b.WriteString("(\n" + cmd + "\n) || exit")
		} else {
			b.WriteString("( " + cmd + " ) || exit")
		}
	}
	return b.String(), true
}

// noetlTemplate translates {{ workload.x }} (or {{ x }}) into faber's {x}
// and doubles every other brace; any other Jinja is an error.
func (c *conv) noetlTemplate(s string, at *yaml.Node, where string) (string, bool) {
	var b strings.Builder
	last := 0
	ok := true
	for _, loc := range jinjaRe().FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(escapeBraces(s[last:loc[0]]))
		last = loc[1]
		if loc[2] < 0 {
			c.errorf(within(at, s, loc[0]), "%s: the Jinja block %q cannot be translated (faber substitutes {{ workload.NAME }} only)", where, s[loc[0]:loc[1]])
			ok = false
			continue
		}
		name, why := noetlVar(s[loc[2]:loc[3]])
		if why != "" {
			c.errorf(within(at, s, loc[0]), "%s: the Jinja template %q cannot be translated: %s", where, s[loc[0]:loc[1]], why)
			ok = false
			continue
		}
		b.WriteString("{" + name + "}")
	}
	b.WriteString(escapeBraces(s[last:]))
	if rest := s[last:]; ok && (strings.Contains(rest, "{{") || strings.Contains(rest, "{%")) {
		c.errorf(at, "%s: an unclosed Jinja template cannot be translated", where)
		ok = false
	}
	return b.String(), ok
}

// within returns the position of byte off of text s, the value of scalar
// n, when the file holds s on one line as it is (plain, or quoted without
// escapes); else the scalar's own position.
func within(n *yaml.Node, s string, off int) *yaml.Node {
	if n.Value != s || strings.ContainsAny(s, "\n\r\t") {
		return n
	}
	col := n.Column + utf8.RuneCountInString(s[:off])
	switch n.Style {
	case 0:
	case yaml.DoubleQuotedStyle:
		if strings.ContainsAny(s, `"\`) {
			return n
		}
		col++
	case yaml.SingleQuotedStyle:
		if strings.Contains(s, "'") {
			return n
		}
		col++
	default:
		return n
	}
	return &yaml.Node{Line: n.Line, Column: col}
}

// noetlVar reads the inside of {{ }}: the context key it names, or why it
// cannot be translated.
func noetlVar(inner string) (string, string) {
	in := strings.TrimSpace(inner)
	if m := varRe().FindStringSubmatch(in); m != nil {
		if strings.HasPrefix(in, "workload.") || !noetlScopes[m[1]] {
			if !ctxKeyRe().MatchString(m[1]) {
				return "", fmt.Sprintf("%q is no faber context key ([a-z_][a-z0-9_]*)", m[1])
			}
			return m[1], ""
		}
	}
	switch {
	case strings.Contains(in, "|"):
		return "", "a Jinja filter"
	case strings.HasPrefix(in, "vars.") || strings.HasPrefix(in, "args.") || strings.Contains(in, ".result") || strings.HasPrefix(in, "result"):
		return "", "it reads a step result or variable (faber passes values between steps with $FABER_OUTPUTS and {steps.ID.outputs.KEY})"
	}
	return "", "faber substitutes {{ workload.NAME }} only"
}

// noetlScopes are names that are not workload values.
var noetlScopes = map[string]bool{"workload": true, "vars": true, "args": true, "result": true, "event": true, "ctx": true, "secret": true, "keychain": true}

// noetlCond translates a condition as noetl run evaluates it: templates
// rendered, then OPERAND == OPERAND, OPERAND != OPERAND (strings, quotes
// stripped), or a truthy OPERAND (not empty, "false" or "0"). It returns
// an expr expression ("" after an error).
func (c *conv) noetlCond(s string, at *yaml.Node, where string) string {
	fail := func(why string) string {
		c.errorf(at, "%s: the condition %q cannot be translated: %s", where, s, why)
		return ""
	}
	// {{ ... }} holding a whole expression: its inside, with bare names.
	t := strings.TrimSpace(s)
	var vars []string // the names of the templates, \x00N\x00 in the text
	var b strings.Builder
	last := 0
	for _, loc := range jinjaRe().FindAllStringSubmatchIndex(t, -1) {
		b.WriteString(t[last:loc[0]])
		last = loc[1]
		if loc[2] < 0 {
			return fail("a Jinja block")
		}
		name, why := noetlVar(t[loc[2]:loc[3]])
		if why != "" {
			if loc[0] == 0 && loc[1] == len(t) { // {{ expression }}
				return c.noetlExpr(t[loc[2]:loc[3]], s, at, where)
			}
			return fail(why)
		}
		b.WriteString(fmt.Sprintf("\x00%d\x00", len(vars)))
		vars = append(vars, name)
	}
	b.WriteString(t[last:])
	r := b.String()
	if strings.Contains(r, "{{") || strings.Contains(r, "{%") || strings.Contains(r, "}}") {
		return fail("an unclosed Jinja template")
	}
	return c.noetlCompare(r, vars, s, at, where)
}

// noetlExpr translates {{ A == B }} (names bare: workload.x).
func (c *conv) noetlExpr(inner, s string, at *yaml.Node, where string) string {
	in := strings.TrimSpace(inner)
	if strings.Contains(in, "|") {
		c.errorf(at, "%s: the condition %q cannot be translated: a Jinja filter", where, s)
		return ""
	}
	return c.noetlCompare(in, nil, s, at, where)
}

var (
	placeholderRe = lazyre.New("^\x00([0-9]+)\x00$")
	literalRe     = lazyre.New(`^[A-Za-z0-9_.:/@+-]*$`)
	// one comparison of a context value with a string, as noetlCompare writes it
	compareRe = lazyre.New(`^(context\.[a-z_][a-z0-9_]*) (==|!=) ("(?:[^"\\]|\\.)*")$`)
)

func (c *conv) noetlCompare(r string, vars []string, s string, at *yaml.Node, where string) string {
	fail := func(why string) string {
		c.errorf(at, "%s: the condition %q cannot be translated: %s", where, s, why)
		return ""
	}
	operand := func(o string) (string, bool) {
		o = strings.TrimSpace(o)
		if m := placeholderRe().FindStringSubmatch(o); m != nil {
			i, _ := strconv.Atoi(m[1])
			return "context." + vars[i], true
		}
		if strings.Contains(o, "\x00") {
			fail("a template inside other text (write {{ workload.x }} == value)")
			return "", false
		}
		if len(o) >= 2 && (o[0] == '\'' || o[0] == '"') && o[len(o)-1] == o[0] {
			return strconv.Quote(o[1 : len(o)-1]), true
		}
		if strings.HasPrefix(o, "workload.") {
			name, why := noetlVar(o)
			if why != "" {
				fail(why)
				return "", false
			}
			return "context." + name, true
		}
		if !literalRe().MatchString(o) {
			fail(fmt.Sprintf("%q is neither {{ workload.NAME }} nor a value (faber translates ==, != and a truthy {{ workload.NAME }})", o))
			return "", false
		}
		if strings.HasPrefix(o, "vars.") || strings.HasPrefix(o, "args.") || strings.Contains(o, ".result") {
			fail("it reads a step result or variable")
			return "", false
		}
		return strconv.Quote(o), true
	}
	for _, op := range []string{"==", "!="} {
		if !strings.Contains(r, op) {
			continue
		}
		parts := strings.Split(r, op)
		if len(parts) != 2 {
			return fail("more than one " + op)
		}
		a, ok1 := operand(parts[0])
		if !ok1 {
			return ""
		}
		b, ok2 := operand(parts[1])
		if !ok2 {
			return ""
		}
		return a + " " + op + " " + b
	}
	a, ok := operand(r)
	if !ok {
		return ""
	}
	if !strings.HasPrefix(a, "context.") {
		// a constant: noetl run's truthiness, decided now
		v, _ := strconv.Unquote(a)
		if v != "" && v != "false" && v != "0" {
			return "true"
		}
		return "false"
	}
	return fmt.Sprintf("(%s != \"\" && %s != \"false\" && %s != \"0\")", a, a, a)
}

// and joins conditions ("" = true) with &&.
func and(cs ...string) string {
	var parts []string
	seen := map[string]bool{}
	for _, c := range cs {
		switch {
		case c == "" || c == "true" || seen[c]:
			continue
		case c == "false":
			return "false"
		}
		seen[c] = true
		parts = append(parts, c)
	}
	if len(parts) > 1 {
		for i, c := range parts {
			if strings.Contains(c, "||") && !wrapped(c) {
				parts[i] = "(" + c + ")"
			}
		}
	}
	return strings.Join(parts, " && ")
}

// or joins conditions with ||; one that is "" (true) makes it "".
func or(cs ...string) string {
	var parts []string
	seen := map[string]bool{}
	for _, c := range cs {
		if c == "" || c == "true" {
			return ""
		}
		if c == "false" || seen[c] {
			continue
		}
		seen[c] = true
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return "false"
	}
	if len(parts) > 1 {
		for i, c := range parts {
			if strings.Contains(c, "&&") && !wrapped(c) {
				parts[i] = "(" + c + ")"
			}
		}
	}
	return strings.Join(parts, " || ")
}

// not negates a condition.
func not(c string) string {
	switch c {
	case "", "true":
		return "false"
	case "false":
		return ""
	}
	if m := compareRe().FindStringSubmatch(c); m != nil {
		op := "!="
		if m[2] == "!=" {
			op = "=="
		}
		return m[1] + " " + op + " " + m[3]
	}
	if wrapped(c) {
		return "!" + c
	}
	return "!(" + c + ")"
}

// wrapped: c is one parenthesized group.
func wrapped(c string) bool {
	if !strings.HasPrefix(c, "(") || !strings.HasSuffix(c, ")") {
		return false
	}
	depth, inStr := 0, false
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; {
		case inStr && ch == '\\':
			i++
		case ch == '"':
			inStr = !inStr
		case inStr:
		case ch == '(':
			depth++
		case ch == ')':
			depth--
			if depth == 0 && i != len(c)-1 {
				return false
			}
		}
	}
	return true
}
