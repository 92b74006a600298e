package importer

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/faber-run/faber/internal/lazyre"
)

// faberPhases are FABER's phases, in the order they run.
func faberPhases() []string {
	return []string{"frame", "architect", "build", "evaluate", "release"}
}

// faberPlan is what the top level of a FABER plan.json says about the
// steps: which phases and step run, for which items, with which agent.
type faberPlan struct {
	items        []map[string]string // flattened work items
	written      int                 // item values written so far (all steps)
	tooMany      bool                // written passed maxItemCells, reported
	fields       []string            // the names of the items' fields, in file order
	itemsN       *yaml.Node
	itemArg      string // --work-id or --target
	itemKey      string // work_id or target
	maxParallel  *yaml.Node
	instructions string
	phasesToRun  map[string]bool
	stepToRun    string
	stepToRunN   *yaml.Node
	agent        []string
	needPrompt   bool // a step runs a bare prompt: the /prompt command is needed
	// Approval gates (README "FABER plans"): what asks for each, by phase
	// name and by "phase:step-id"; the autonomy levels read (the plan's
	// wins over the workflow's) and the require_approval_for entries.
	phaseGates  map[string][]faberGate
	stepGates   map[string][]faberGate
	planLevel   *yaml.Node
	wfLevel     *yaml.Node
	approvalFor []*yaml.Node
	// Budgets (faber_budget.go): the workflow's defaults and each
	// phase's phase_defaults, nil where none.
	wfBudget     *faberBudget
	phaseBudgets map[string]*faberBudget
}

// faberGate is one reason for an approval gate: the FABER setting that
// asks for it (why) and where it is written (at).
type faberGate struct {
	why string
	at  *yaml.Node
}

func (c *conv) faber(root *yaml.Node) *yaml.Node {
	out := newMap(root)
	fp := &faberPlan{agent: c.opts.Agent, phaseGates: map[string][]faberGate{}, stepGates: map[string][]faberGate{},
		phaseBudgets: map[string]*faberBudget{}}
	var nameF, wfN, agentF *yaml.Node
	var nameK, instrN *yaml.Node
	for _, f := range c.fields(root, "plan") {
		switch f.key {
		case "id":
			nameK, nameF = f.k, f.v
		case "workflow":
			wfN = f.v
		case "items":
			c.faberItems(f.v, fp)
		case "agent":
			agentF = f.v
		case "autonomy":
			fp.planLevel = c.faberAutonomy(f, "autonomy", fp)
		case "phases_to_run":
			fp.phasesToRun = map[string]bool{}
			for _, p := range c.strList(f.v, "phases_to_run") {
				for _, x := range strings.Split(p.Value, ",") {
					if x = strings.TrimSpace(x); x != "" {
						fp.phasesToRun[x] = true
					}
				}
			}
		case "step_to_run":
			fp.stepToRun, _ = c.str(f.v, "step_to_run")
			fp.stepToRunN = f.v
		case "additional_instructions":
			instrN = f.v
		case "execution":
			for _, e := range c.fields(f.v, "execution") {
				switch e.key {
				case "max_concurrent":
					fp.maxParallel = e.v
				case "mode":
					if e.v.Value == "serial" {
						fp.maxParallel = newScalar(e.v, "1")
					}
				case "status", "started_at", "completed_at", "results":
					// the executor's bookkeeping, not the plan
				default:
					c.errorf(e.k, "execution: unknown FABER field %q: no faber equivalent", e.key)
				}
			}
		case "created", "created_by", "source", "$schema", "resolved_at":
			// metadata of the planner
		default:
			c.errorf(f.k, "unknown FABER plan field %q: no faber equivalent", f.key)
		}
	}
	if instrN != nil {
		if s, ok := c.str(instrN, "additional_instructions"); ok {
			fp.instructions, _ = c.template(s, instrN, "additional_instructions", fp)
		}
	}
	if agentF != nil {
		fp.agent = nil
		switch agentF.Kind {
		case yaml.ScalarNode:
			fp.agent = strings.Fields(agentF.Value)
		default:
			for _, a := range c.strList(agentF, "agent") {
				fp.agent = append(fp.agent, a.Value)
			}
		}
	}
	if len(fp.agent) == 0 {
		fp.agent = defaultAgent()
	}
	var desc *yaml.Node
	var phaseMap map[string]field
	wfID := ""
	for _, f := range c.fields(wfN, "workflow") {
		switch f.key {
		case "id":
			wfID = f.v.Value
			if nameF == nil {
				nameK, nameF = f.k, f.v
			}
		case "description":
			desc = f.v
		case "phases":
			phaseMap = map[string]field{}
			for _, p := range c.fields(f.v, "workflow: phases") {
				phaseMap[p.key] = p
			}
		case "hooks":
			for _, h := range c.fields(f.v, "workflow: hooks") {
				if len(h.v.Content) > 0 {
					c.errorf(h.k, "workflow: hooks: %s: not supported (write the hook as a step of pre_steps or post_steps)", h.key)
				}
			}
		case "autonomy":
			fp.wfLevel = c.faberAutonomy(f, "workflow: autonomy", fp)
		case "defaults":
			fp.wfBudget = c.faberDefaults(f.v, "workflow: defaults")
		case "phase_defaults":
			c.faberPhaseDefaults(f.v, fp)
		case "extends", "skip_steps":
			c.errorf(f.k, "workflow: %s: not supported: import a resolved plan (the planner's plan.json has the whole workflow)", f.key)
		case "resolved_at", "inheritance_chain", "$schema", "integrations", "logging", "name":
			// metadata of the planner
		default:
			c.errorf(f.k, "workflow: unknown FABER field %q: no faber equivalent", f.key)
		}
	}
	if nameF == nil {
		c.errorf(root, "missing \"id\" (or workflow.id): the plan needs a name")
	} else if s, ok := c.str(nameF, "id"); ok {
		set(out, nameK, "name", newStr(nameF, s))
	}
	if desc != nil {
		set(out, nil, "description", c.clone(desc, 0))
	} else if wfID != "" {
		set(out, nil, "description", newStr(wfN, "FABER workflow "+wfID))
	}
	known := map[string]bool{}
	for _, p := range faberPhases() {
		known[p] = true
	}
	for k, p := range phaseMap {
		if !known[k] {
			c.errorf(p.k, "workflow: phases: unknown phase %q (FABER's phases are %s)", k, strings.Join(faberPhases(), ", "))
		}
	}
	for p := range fp.phasesToRun {
		if !known[p] {
			c.errorf(root, "phases_to_run: unknown phase %q", p)
		}
	}
	c.faberGates(fp, phaseMap)
	phases := newSeq(wfN, false)
	stepFound := false
	for _, name := range faberPhases() {
		pf, ok := phaseMap[name]
		if !ok || (fp.phasesToRun != nil && !fp.phasesToRun[name]) {
			continue
		}
		if ph := c.faberPhase(name, pf, fp, &stepFound); ph != nil {
			phases.Content = append(phases.Content, ph)
		}
	}
	if fp.stepToRun != "" && !stepFound {
		c.errorf(fp.stepToRunN, "step_to_run: no step %q (write phase:step-id)", fp.stepToRun)
	}
	// One item: its fields are the plan's context variables, so {work_id}
	// resolves in every step (and --set work_id=... reuses the plan).
	if len(fp.items) == 1 && len(fp.fields) > 0 {
		ctx := newMap(fp.itemsN)
		for _, k := range fp.fields {
			set(ctx, fp.itemsN, k, newStr(fp.itemsN, fp.items[0][k]))
		}
		set(out, nil, "context", ctx)
	}
	// agent and commands come before the phases, as in a hand-written plan.
	ag := newSeq(root, true)
	for _, a := range fp.agent {
		ag.Content = append(ag.Content, newStr(root, a))
	}
	set(out, agentF, "agent", ag)
	if fp.needPrompt {
		cmds := newMap(root)
		set(cmds, nil, "/prompt", newStr(root, shellJoin(fp.agent)))
		set(out, nil, "commands", cmds)
	}
	if len(phases.Content) == 0 {
		c.errorf(wfN, "workflow: no phase with steps to run")
	}
	set(out, nil, "phases", phases)
	return out
}

// faberBuiltins are faber's built-in variables: an item field of one of
// these names cannot be a variable of the plan, so it is left out.
func faberBuiltins() map[string]bool {
	return map[string]bool{"run_id": true, "plan_name": true, "step_id": true, "step_name": true, "phase": true, "attempt": true,
		"error": true, "exit_code": true, "stdout_file": true, "stderr_file": true}
}

// maxItemCells bounds items × fields of a FABER plan's items.
const maxItemCells = 1 << 20

// faberItems reads items[]: each a mapping, flattened to scalar fields
// (issue.number becomes issue_number). Every item gets every field (""
// where it has none), so that each field is a variable of every step.
func (c *conv) faberItems(n *yaml.Node, fp *faberPlan) {
	fp.itemsN = n
	if n.Kind != yaml.SequenceNode {
		c.errorf(n, "items: must be a list, not %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	builtin := faberBuiltins()
	for i, it := range n.Content {
		it = deref(it)
		m := map[string]string{}
		var order []string
		c.flatten(it, "", "", m, &order, map[string]string{}, fmt.Sprintf("items[%d]", i))
		for _, k := range order {
			if builtin[k] {
				delete(m, k)
				if !seen[k] {
					seen[k] = true
					c.warnf(it, "items[%d]: field %q left out: {%s} is faber's built-in variable", i, k, k)
				}
				continue
			}
			if !seen[k] {
				seen[k] = true
				fp.fields = append(fp.fields, k)
			}
		}
		fp.items = append(fp.items, m)
	}
	if len(fp.items) == 0 {
		return
	}
	if cells := len(fp.items) * len(fp.fields); cells > maxItemCells {
		// Every item gets every field: items with different fields would
		// make a plan the square of the file's size.
		c.errorf(n, "items: %d items with %d distinct fields make %d values, more than %d (every item gets every field); give the items the same fields", len(fp.items), len(fp.fields), cells, maxItemCells)
		fp.items = nil
		return
	}
	for _, m := range fp.items {
		for _, k := range fp.fields {
			if _, ok := m[k]; !ok {
				m[k] = ""
			}
		}
	}
	for _, key := range []string{"work_id", "target"} {
		all := true
		for _, m := range fp.items {
			if m[key] == "" {
				all = false
			}
		}
		if all {
			fp.itemKey, fp.itemArg = key, "--"+strings.ReplaceAll(key, "_", "-")
			return
		}
	}
	c.errorf(n, "items: every item needs a work_id (or every item a target): it is what the steps are run for")
}

// flatten collects the scalar fields of an item under variable names: the
// path of keys, each made a name (varName), joined by '_'. from maps each
// name to the path it came from, to report two paths that become one name.
func (c *conv) flatten(n *yaml.Node, prefix, path string, m map[string]string, order *[]string, from map[string]string, where string) {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		for _, f := range c.fields(n, where) {
			k := varName(f.key)
			if k == "" {
				c.warnf(f.k, "%s: field %q left out: it has no letter or digit to name a variable by", where, f.key)
				continue
			}
			p := f.key
			if prefix != "" {
				k = prefix + "_" + k
				p = path + "." + f.key
			}
			c.flatten(f.v, k, p, m, order, from, where)
		}
	case yaml.ScalarNode:
		if prefix == "" {
			c.errorf(n, "%s: must be a mapping with work_id or target, not %s", where, kindName(n))
			return
		}
		if prev, dup := from[prefix]; dup {
			c.errorf(n, "%s: fields %q and %q both become the variable {%s}", where, prev, path, prefix)
			return
		}
		from[prefix] = path
		m[prefix] = n.Value
		*order = append(*order, prefix)
	case yaml.SequenceNode:
		// lists in items (labels, ...) do not reach the steps
	}
}

// varName makes a key a faber variable name ([a-z_][a-z0-9_]*): lower
// case, every run of other characters becomes '_', leading and trailing
// '_' go, and a leading digit gets a '_' before it. "" when nothing is
// left.
func varName(k string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(k) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteRune(r)
			continue
		}
		sep = true
	}
	s := strings.Trim(b.String(), "_")
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return s
}

// faberPlaceholder matches a {placeholder} in FABER text: a name, or a
// dotted path into an item ({issue.number}).
var faberPlaceholder = lazyre.New(`\{([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)\}`)

// faberVarName matches what faber reads as a variable reference.
var faberVarName = lazyre.New(`^[a-z_][a-z0-9_]*$`)

// template turns FABER text (a prompt, a config value) into faber template
// text, to be substituted as a handler's arguments are (SPEC §4.1): a
// {placeholder} naming a field of the items becomes that variable ({work_id}
// with one item, {item.work_id} when the step fans out); another {name}
// stays a reference, for validation to resolve (faber's built-ins) or
// refuse; a dotted {a.b} that names no field is an error; {{name}} is the
// literal text {name}; every other brace is literal. ok is false after an
// error.
func (c *conv) template(text string, at *yaml.Node, where string, fp *faberPlan) (string, bool) {
	field := map[string]bool{}
	for _, k := range fp.fields {
		field[k] = true
	}
	var b strings.Builder
	last, ok := 0, true
	for _, loc := range faberPlaceholder().FindAllStringSubmatchIndex(text, -1) {
		if loc[0] > 0 && text[loc[0]-1] == '$' {
			continue // the shell's ${name}: text
		}
		path := text[loc[2]:loc[3]]
		if loc[0] > 0 && text[loc[0]-1] == '{' && loc[1] < len(text) && text[loc[1]] == '}' {
			// {{name}}: the literal text {name}, as in a faber template
			b.WriteString(escapeBraces(text[last : loc[0]-1]))
			b.WriteString(escapeBraces(text[loc[0]:loc[1]]))
			last = loc[1] + 1
			continue
		}
		var parts []string
		for _, p := range strings.Split(path, ".") {
			parts = append(parts, varName(p))
		}
		name := strings.Join(parts, "_")
		if len(parts) > 1 && parts[0] == "item" && field[strings.Join(parts[1:], "_")] {
			name = strings.Join(parts[1:], "_")
		}
		var ref string
		switch {
		case field[name] && len(fp.items) > 1:
			ref = "{item." + name + "}"
		case field[name]:
			ref = "{" + name + "}"
		case faberVarName().MatchString(path):
			ref = "{" + path + "}"
		case strings.Contains(path, "."):
			c.errorf(at, "%s: {%s} names no field of items%s", where, path, c.fieldList(fp))
			ok = false
			continue
		default:
			continue // {Name}, {a-b}: text
		}
		b.WriteString(escapeBraces(text[last:loc[0]]))
		b.WriteString(ref)
		last = loc[1]
	}
	b.WriteString(escapeBraces(text[last:]))
	return b.String(), ok
}

func (c *conv) fieldList(fp *faberPlan) string {
	if len(fp.fields) == 0 {
		return " (the plan has no items)"
	}
	return " (the items' fields are " + strings.Join(fp.fields, ", ") + ")"
}

// faberPhase converts one phase: pre_steps, steps and post_steps, in that
// order, as the sequential steps of one faber phase.
func (c *conv) faberPhase(name string, pf field, fp *faberPlan, stepFound *bool) *yaml.Node {
	ph := newMap(pf.k)
	set(ph, pf.k, "name", newStr(pf.k, name))
	steps := newSeq(pf.v, false)
	lists := map[string]field{}
	var gates []faberGate
	for _, f := range c.fields(pf.v, "phase "+name) {
		switch f.key {
		case "enabled":
			if f.v.Value == "false" {
				c.warnf(f.k, "phase %s: enabled: false: the phase is left out", name)
				return nil
			}
		case "pre_steps", "steps", "post_steps":
			lists[f.key] = f
		case "description":
			// faber phases have no description; the steps keep theirs
		case "validation":
			c.warnf(f.k, "phase %s: validation: dropped (faber checks a step by its exit code; make a step that checks)", name)
		case "max_retries":
			c.warnf(f.k, "phase %s: max_retries: dropped (faber has no phase retry loop; use result_handling or failure_handlers on a step)", name)
		case "require_approval":
			if f.v.Kind != yaml.ScalarNode || f.v.ShortTag() != "!!bool" {
				c.errorf(f.v, "phase %s: require_approval: must be true or false, not %s", name, kindName(f.v))
			} else if f.v.Value == "true" {
				gates = append(gates, faberGate{why: "require_approval", at: f.k})
			}
		default:
			c.errorf(f.k, "phase %s: unknown FABER field %q: no faber equivalent", name, f.key)
		}
	}
	if g := append(gates, fp.phaseGates[name]...); len(g) > 0 {
		set(ph, g[0].at, "approval", newStr(g[0].at, gatePrompt("phase "+name, "Start it?", g)))
	}
	for _, key := range []string{"pre_steps", "steps", "post_steps"} {
		f, ok := lists[key]
		if !ok {
			continue
		}
		if f.v.Kind != yaml.SequenceNode {
			c.errorf(f.v, "phase %s: %s: must be a list, not %s", name, key, kindName(f.v))
			continue
		}
		for _, sn := range f.v.Content {
			sn = deref(sn)
			if s := c.faberStep(name, sn, fp, stepFound, steps.Content); s != nil {
				steps.Content = append(steps.Content, s)
			}
		}
	}
	if len(steps.Content) == 0 {
		return nil
	}
	set(ph, nil, "steps", steps)
	return ph
}

// faberStep converts one step.
//
// prev are the converted steps before it in its phase (a conditional:
// only_if_failures tests them).
func (c *conv) faberStep(phase string, sn *yaml.Node, fp *faberPlan, stepFound *bool, prev []*yaml.Node) *yaml.Node {
	fs := map[string]field{}
	var order []string
	for _, f := range c.fields(sn, "phase "+phase+": step") {
		fs[f.key] = f
		order = append(order, f.key)
	}
	idF, ok := fs["id"]
	if !ok {
		c.errorf(sn, "phase %s: a step has no id", phase)
		return nil
	}
	where := fmt.Sprintf("phase %s: step %q", phase, idF.v.Value)
	if fp.stepToRun != "" {
		if fp.stepToRun != phase+":"+idF.v.Value {
			return nil
		}
		*stepFound = true
	}
	s := newMap(sn)
	id := sanitizeID(phase + "-" + idF.v.Value)
	set(s, idF.k, "id", newStr(idF.v, id))
	if f, ok := fs["name"]; ok {
		set(s, f.k, "name", c.clone(f.v, 0))
	}
	if f, ok := fs["description"]; ok {
		set(s, f.k, "description", c.clone(f.v, 0))
	}
	// The prompt and config values are templates: their placeholders
	// become variables, substituted word by word like a handler's.
	prompt := ""
	if f, ok := fs["prompt"]; ok {
		if p, ok := c.str(f.v, where+": prompt"); ok {
			prompt, _ = c.template(p, f.v, where+": prompt", fp)
		}
	}
	if fp.instructions != "" {
		if prompt != "" {
			prompt += "\n\n"
		}
		prompt += fp.instructions
	}
	var words []string
	at := sn
	if f, ok := fs["skill"]; ok {
		sk, _ := c.str(f.v, where+": skill")
		words = append(words, "/"+escapeBraces(sk))
		at = f.k
		if cf, ok := fs["config"]; ok {
			words = append(words, c.configArgs(cf, where, fp)...)
		}
	} else if f, ok := fs["prompt"]; ok {
		words = append(words, "/prompt")
		at = f.k
		fp.needPrompt = true
		if cf, ok := fs["config"]; ok {
			c.errorf(cf.k, "%s: config: only a skill takes config", where)
		}
	} else {
		c.errorf(sn, "%s: has neither prompt nor skill: nothing to run", where)
		return nil
	}
	if prompt != "" {
		words = append(words, shellQuote(prompt))
	}
	line := strings.Join(words, " ")
	switch {
	case len(fp.items) == 1:
		line += " " + fp.itemArg + " {" + fp.itemKey + "}"
	case len(fp.items) > 1:
		line += " " + fp.itemArg + " {item." + fp.itemKey + "}"
	}
	set(s, at, "run", newStr(at, line))
	if len(fp.items) > 1 {
		// Every step writes every item's every field: bound the total, as
		// for one step (a few thousand steps over a few thousand items
		// would otherwise be gigabytes of nodes).
		fp.written += len(fp.items) * len(fp.fields)
		if fp.written > maxItemCells {
			if !fp.tooMany {
				fp.tooMany = true
				c.errorf(fp.itemsN, "items: %d items with %d fields, written for each step, make more than %d values; convert fewer steps (phases_to_run, step_to_run) or items", len(fp.items), len(fp.fields), maxItemCells)
			}
			return s
		}
		l := newSeq(fp.itemsN, false)
		for _, it := range fp.items {
			m := newMap(fp.itemsN)
			m.Style = yaml.FlowStyle
			for _, k := range fp.fields {
				set(m, fp.itemsN, k, newStr(fp.itemsN, it[k]))
			}
			l.Content = append(l.Content, m)
		}
		set(s, fp.itemsN, "foreach", l)
		if fp.maxParallel != nil {
			set(s, fp.maxParallel, "max_parallel", newScalar(fp.maxParallel, fp.maxParallel.Value))
		}
	}
	if g := fp.stepGates[phase+":"+idF.v.Value]; len(g) > 0 {
		set(s, g[0].at, "approval", newStr(g[0].at, gatePrompt("step "+phase+":"+idF.v.Value, "Run it?", g)))
	}
	own := &faberBudget{}
	for _, key := range order {
		f := fs[key]
		switch key {
		case "id", "name", "description", "prompt", "skill", "config":
		case "max_budget_usd", "max_turns":
			c.faberBudgetField(f, where, own)
		case "result_handling":
			rh := newMap(f.v)
			for _, r := range c.fields(f.v, where+": result_handling") {
				switch r.key {
				case "on_failure", "max_retries":
					set(rh, r.k, r.key, c.clone(r.v, 0))
				case "on_success", "on_warning":
					if r.v.Value != "continue" {
						c.warnf(r.k, "%s: result_handling: %s: %s dropped (faber goes on after a step that exits 0)", where, r.key, kindName(r.v))
					}
				default:
					c.errorf(r.k, "%s: result_handling: unknown FABER field %q: no faber equivalent", where, r.key)
				}
			}
			if len(rh.Content) > 0 {
				set(s, f.k, "result_handling", rh)
			}
		case "conditional":
			c.faberConditional(s, f, where, phase, prev)
		case "guards":
			c.errorf(f.k, "%s: guards: not supported: FABER documents no syntax for skip_if and require_if, so faber cannot translate them; write the condition as a when: in the converted plan (an expression over steps.<id>.status, steps.<id>.outputs.<KEY> and context.<key>)", where)
		default:
			c.errorf(f.k, "%s: unknown FABER step field %q: no faber equivalent", where, key)
		}
	}
	c.faberStepBudget(s, phase, own, fp)
	return s
}

// configArgs turns a skill's config into --key value arguments (true:
// --key alone; false: left out).
func (c *conv) configArgs(cf field, where string, fp *faberPlan) []string {
	var out []string
	for _, f := range c.fields(cf.v, where+": config") {
		if f.v.Kind != yaml.ScalarNode {
			c.errorf(f.v, "%s: config: %s: must be a string, number or boolean (nested config is not supported)", where, f.key)
			continue
		}
		k := escapeBraces(shellQuote("--" + strings.ReplaceAll(f.key, "_", "-")))
		switch {
		case f.v.ShortTag() == "!!bool" && f.v.Value == "true":
			out = append(out, k)
		case f.v.ShortTag() == "!!bool":
		default:
			v, _ := c.template(f.v.Value, f.v, where+": config: "+f.key, fp)
			out = append(out, k, shellQuote(v))
		}
	}
	return out
}

// shellQuote quotes s as one POSIX shell word, with single quotes where
// needed.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// faberConditional converts a step's conditional: into a when:. FABER's
// plugins name their conditions; the one faber can decide is
// only_if_failures (the step runs when a step before it in its phase
// failed): the steps before it go on after a failure (on_failure:
// continue, unless they say otherwise) so that their failure reaches it.
// Every other name is a condition a FABER skill decides at run time: an
// error.
func (c *conv) faberConditional(s *yaml.Node, f field, where, phase string, prev []*yaml.Node) {
	if f.v.Kind != yaml.ScalarNode || f.v.Value != "only_if_failures" {
		c.errorf(f.k, "%s: conditional: not supported: %s is a condition FABER's skills decide as they run, which faber cannot see; faber converts only conditional: only_if_failures (the step runs when a step before it in its phase failed); write a when: in the converted plan instead (an expression over steps.<id>.status, steps.<id>.outputs.<KEY> and context.<key>)", where, kindName(f.v))
		return
	}
	if len(prev) == 0 {
		c.errorf(f.v, "%s: conditional: only_if_failures: no step comes before it in phase %s (of those converted), so none can have failed", where, phase)
		return
	}
	var terms, continued []string
	for _, p := range prev {
		_, idN := get(p, "id")
		terms = append(terms, fmt.Sprintf("steps[%q].status == \"failure\"", idN.Value))
		_, rh := get(p, "result_handling")
		if rh == nil {
			rh = newMap(f.v)
			set(p, f.k, "result_handling", rh)
		}
		if _, of := get(rh, "on_failure"); of == nil {
			set(rh, f.k, "on_failure", newStr(f.v, "continue"))
			continued = append(continued, idN.Value)
		}
	}
	set(s, f.k, "when", newStr(f.v, strings.Join(terms, " || ")))
	if len(continued) > 0 {
		c.warnf(f.k, "%s: conditional: only_if_failures: step(s) %s now go on after a failure (result_handling.on_failure: continue), so that this step runs after one; the run still ends failed", where, strings.Join(continued, ", "))
	}
}
