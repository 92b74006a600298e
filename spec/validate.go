package spec

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/faber-run/faber/spec/subst"
	"gopkg.in/yaml.v3"
)

// Built-in variable names.
var (
	stepBuiltins    = []string{"run_id", "plan_name", "step_id", "step_name", "phase", "attempt"}
	handlerBuiltins = []string{"error", "exit_code", "stdout_file", "stderr_file"}
)

// Builtins returns the names of the built-in variables: run_id, plan_name,
// step_id, step_name, phase and attempt; with handler, also error, exit_code,
// stdout_file and stderr_file (available in on_failure handlers and recovery
// scripts).
func Builtins(handler bool) []string {
	out := append([]string(nil), stepBuiltins...)
	if handler {
		out = append(out, handlerBuiltins...)
	}
	return out
}

// Vars returns the substitution map for one step: the plan's context, then
// the given built-in values (which never collide with context keys: the
// parser rejects context keys named like built-ins).
func (p *Plan) Vars(builtins map[string]string) map[string]string {
	vars := make(map[string]string, len(p.Context)+len(builtins))
	for k, v := range p.Context {
		vars[k] = v
	}
	for k, v := range builtins {
		vars[k] = v
	}
	return vars
}

var contextKey = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// shellVar is a shell variable name.
var shellVar = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// builder turns the raw structures into a Plan and validates it.
type builder struct {
	*parser
	plan *Plan
	goos string

	known map[string]bool // context keys
	// used are the context keys some {name} of the plan refers to;
	// declared the keys of its context: (without --set).
	used     map[string]bool
	declared []string
	// Template checks done once per failure-handler rule.
	ruleChecked map[*Rule]bool
	ruleRaw     map[*Rule]*rawRule
	// ruleProgChecked marks rules whose recovery script's program was
	// checked (a handler's rules are shared by its steps).
	ruleProgChecked map[*Rule]bool
	scripts         []scriptCheck
	// itemNeeds are a step's needs: entries naming items (base[{item}]);
	// plainNeed the fan-out steps it also needs as a whole.
	itemNeeds map[*Step][]itemNeed
	plainNeed map[*Step]map[string]bool
	// itemVars are the {item...} names of the fan-out step being checked.
	itemVars map[string]bool
	// knownIDs are the step ids, sorted, for suggestions; unknownNeeds
	// counts the needs of unknown steps (maxSuggested get a suggestion).
	knownIDs     []string
	unknownNeeds int
	// consumer is the step whose templates are being checked (nil outside
	// checkStep); outputUses are the output references of the steps'
	// templates, checked once every step and dependency is known
	// (checkOutputUses); cyclic is set when findCycles found a cycle.
	consumer   *Step
	outputUses []outputUse
	cyclic     bool
	// usesPos are the positions of the consumer's Uses, to sort them.
	usesPos []Pos
	// items counts the items of the plan's fan-outs (MaxPlanItems).
	items        int
	tooManyItems bool
}

// build converts raw into a Plan, recording every problem found.
func (p *parser) build(raw *rawPlan) *Plan {
	b := &builder{
		parser:          p,
		goos:            p.opts.GOOS,
		known:           map[string]bool{},
		used:            map[string]bool{},
		ruleChecked:     map[*Rule]bool{},
		ruleRaw:         map[*Rule]*rawRule{},
		ruleProgChecked: map[*Rule]bool{},
		itemNeeds:       map[*Step][]itemNeed{},
		plainNeed:       map[*Step]map[string]bool{},
	}
	if b.goos == "" {
		b.goos = runtime.GOOS
	}
	pl := &Plan{
		File:             p.file,
		Dir:              planDir(p.file),
		Name:             raw.Name.V,
		Description:      raw.Description.V,
		Jobs:             raw.Jobs.V,
		Shell:            raw.Shell.V,
		UsePendingFailed: raw.UsePendingFailed.V,
		StopMode:         StopDrain,
		HandlerTimeout:   raw.HandlerTimeout.V,
		KillGrace:        raw.KillGrace.V,
		Memory:           raw.Memory.V,
		CPUs:             raw.CPUs.V,
		Executor:         raw.Executor.V,
		goos:             b.goos,
	}
	b.plan = pl
	if raw.Name.Set && strings.TrimSpace(raw.Name.V) == "" {
		p.errorf(raw.Name.Pos, "name: must not be empty")
	}
	if raw.StopMode.Set {
		pl.StopMode = raw.StopMode.V
	}
	pl.Env, pl.EnvKeys = b.omap(&raw.Env)
	pl.Slurm = slurmOf(raw.Slurm, nil, b)
	pl.Sge = sgeOf(raw.Sge, nil, b)

	b.context(raw)
	b.secrets(raw)
	for i := range raw.Env.Vals {
		b.checkTemplate(&raw.Env.Vals[i], "env", false, refsPlanEnv)
	}
	b.agent(raw)
	b.commands(raw)
	b.handlers(raw)
	b.resources(raw)
	b.steps(raw)
	if raw.End != nil {
		b.end(raw.End)
	}
	b.planOutputs(raw)
	b.notify(raw)
	b.plan.Budget = b.budget(raw.Budget, "plan")
	b.unusedSets()
	b.resolveDeps()
	b.findCycles()
	b.checkOutputUses()
	b.runScriptChecks()
	b.expandFanOuts()
	// What the plan was built from goes: a plan of 100,000 steps would keep
	// its raw form alive otherwise.
	for _, s := range pl.Steps {
		s.src = nil
	}
	if pl.End != nil {
		pl.End.src = nil
	}
	b.byID()
	return pl
}

// omap converts a raw mapping into a Go map and its keys in file order.
func (b *builder) omap(m *omap) (map[string]string, []string) {
	if !m.Set {
		return nil, nil
	}
	out := make(map[string]string, len(m.Keys))
	keys := make([]string, 0, len(m.Keys))
	for i, k := range m.Keys {
		out[k.V] = m.Vals[i].V
		keys = append(keys, k.V)
	}
	return out, keys
}

// MinSecret is the shortest secret value faber masks: masking a value of a
// character or two would turn every such character of the output into ***.
const MinSecret = 4

// secrets checks that each secret names a context variable.
func (b *builder) secrets(raw *rawPlan) {
	for _, n := range raw.Secrets.Items {
		if !n.Set {
			continue
		}
		v, ok := b.plan.Context[n.V]
		switch {
		case !ok:
			b.errorf(n.Pos, "secrets: %q is not a context variable (define it in context: or pass --set %s=...)%s", n.V, n.V, suggest(n.V, b.plan.ContextKeys))
			continue
		case v != "" && len(v) < MinSecret:
			b.warnf(n.Pos, "secrets: the value of %q is shorter than %d characters and is not masked", n.V, MinSecret)
		}
		b.used[n.V] = true // secrets: names a --set key too
		b.plan.Secrets = append(b.plan.Secrets, n.V)
	}
}

// context merges the plan's context with --set values.
func (b *builder) context(raw *rawPlan) {
	pl := b.plan
	pl.Context, pl.ContextKeys = b.omap(&raw.Context)
	if pl.Context == nil {
		pl.Context = map[string]string{}
	}
	b.declared = append([]string(nil), pl.ContextKeys...)
	builtin := map[string]bool{}
	for _, n := range Builtins(true) {
		builtin[n] = true
	}
	for _, k := range raw.Context.Keys {
		if builtin[k.V] {
			b.errorf(k.Pos, "context: %q is a built-in variable and cannot be redefined", k.V)
		}
	}
	// --set, in command-line order, then any keys missing from SetKeys.
	order := append([]string(nil), b.opts.SetKeys...)
	listed := map[string]bool{}
	for _, k := range order {
		listed[k] = true
	}
	var rest []string
	for k := range b.opts.Sets {
		if !listed[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	order = append(order, rest...)
	done := map[string]bool{}
	for _, k := range order {
		v, ok := b.opts.Sets[k]
		if !ok || done[k] {
			continue
		}
		done[k] = true
		switch {
		case !contextKey.MatchString(k):
			b.errs = append(b.errs, Diagnostic{Message: fmt.Sprintf("%s: key must match [a-z_][a-z0-9_]*", b.setName(k))})
			continue
		case builtin[k]:
			b.errs = append(b.errs, Diagnostic{Message: fmt.Sprintf("%s: %q is a built-in variable and cannot be redefined", b.setName(k), k)})
			continue
		}
		if _, exists := pl.Context[k]; !exists {
			pl.ContextKeys = append(pl.ContextKeys, k)
		}
		pl.Context[k] = v
	}
	for k := range pl.Context {
		b.known[k] = true
	}
}

// setName names how key k of Sets was given, in messages: "--set k",
// "--set-file k", "FABER_SET_K", or "context k" for a sub-plan's.
func (b *builder) setName(k string) string {
	switch from := b.opts.SetFrom[k]; {
	case b.opts.setsFrom != "":
		return b.opts.setsFrom + " " + k
	case strings.HasPrefix(from, "FABER_SET_"):
		return from
	case from != "":
		return from + " " + k
	}
	return "--set " + k
}

// unusedSets warns about each --set key (in command-line order) that is
// neither a key of the plan's context: nor used by a {name} of the plan:
// most likely a misspelt key, which would leave the plan's value in place.
// Under Strict it is an error. Such a key still reaches every process as
// FABER_CTX_<KEY>; declaring it in context: (with any default) silences this.
func (b *builder) unusedSets() {
	declared := map[string]bool{}
	for _, k := range b.declared {
		declared[k] = true
	}
	for _, k := range b.plan.ContextKeys {
		if _, set := b.opts.Sets[k]; !set || declared[k] || b.used[k] {
			continue
		}
		msg := fmt.Sprintf("%s: not a context variable of the plan", b.setName(k))
		if sug := suggest(k, b.declared); sug != "" {
			msg += sug
		} else {
			msg += fmt.Sprintf(" and no {%s} uses it (declare it in context: if a script reads $FABER_CTX_%s)", k, strings.ToUpper(k))
		}
		d := Diagnostic{File: b.file, Message: msg}
		if b.opts.Strict {
			b.errs = append(b.errs, d)
		} else {
			b.warns = append(b.warns, d)
		}
	}
}

// agent resolves the agent argv.
func (b *builder) agent(raw *rawPlan) {
	a := &raw.Agent
	if !a.Set {
		return
	}
	if a.IsLine {
		if !a.Line.Set {
			return
		}
		w, err := subst.Words(a.Line.V)
		if err != nil {
			b.errorf(a.Line.Pos, "agent: %v", err)
			return
		}
		b.plan.Agent = w
	} else {
		for _, s := range a.List {
			b.plan.Agent = append(b.plan.Agent, s.V)
		}
	}
	if len(b.plan.Agent) > 0 && b.plan.Agent[0] == "" {
		b.errorf(a.Pos, "agent: the program name is empty")
	}
	if len(b.plan.Agent) == 0 {
		b.plan.Agent = nil
	}
}

// MaxStepID is the longest step id: it names a directory under the run's
// logs/ (file systems allow 255 bytes), a Slurm job name and part of a
// sub-plan's child run id, all with room to spare.
const MaxStepID = 128

// commands validates the slash-command registry.
func (b *builder) commands(raw *rawPlan) {
	m := &raw.Commands
	if !m.Set {
		return
	}
	b.plan.Commands = map[string]string{}
	for i, k := range m.Keys {
		v := m.Vals[i]
		b.plan.Commands[k.V] = v.V
		where := "commands: " + k.V
		if strings.TrimSpace(v.V) == "" {
			b.errorf(v.Pos, "%s: the command line is empty", where)
			continue
		}
		words, err := subst.Words(v.V)
		if err != nil {
			b.errorf(v.Pos, "%s: %v", where, err)
			continue
		}
		b.checkTemplate(&v, where, true, refsCommands)
		if len(words) > 0 && !strings.Contains(words[0], "{") {
			if msg := b.checkProgram(words[0]); msg != "" {
				b.errorf(v.Pos, "%s: %s", where, msg)
			}
		}
	}
}

// handlers builds the failure handlers and their rules.
func (b *builder) handlers(raw *rawPlan) {
	b.plan.FailureHandlers = map[string]*FailureHandler{}
	for _, rh := range raw.FailureHandlers.Items {
		if rh == nil || !rh.Name.Set {
			continue
		}
		h := &FailureHandler{Name: rh.Name.V, Pos: rh.Pos}
		if prev, dup := b.plan.FailureHandlers[h.Name]; dup {
			b.errorf(rh.Pos, "failure handler %q is defined twice (first at line %d)", h.Name, prev.Pos.Line)
			continue
		}
		b.plan.FailureHandlers[h.Name] = h
		if rh.has("rules") && len(rh.Rules.Items) == 0 && !rh.Rules.Bad {
			b.errorf(rh.Rules.Pos, "%s: has no rules", rh.Where)
		}
		for i, rr := range rh.Rules.Items {
			if rr == nil {
				continue
			}
			r := &Rule{
				MatchAll:       rr.MatchAll.V,
				RecoveryScript: rr.RecoveryScript.V,
				MaxRetries:     3,
				Delay:          rr.Delay.V,
				Backoff:        BackoffFixed,
				MaxDelay:       rr.MaxDelay.V,
				Index:          i,
				Pos:            rr.Pos,
			}
			if rr.MaxRetries.Set {
				r.MaxRetries = rr.MaxRetries.V
			}
			b.ruleResources(r, rr)
			if rr.Backoff.Set {
				r.Backoff = rr.Backoff.V
			}
			for _, c := range rr.ExitCodes.Items {
				if c.Set && c.V < 0 {
					b.errorf(c.Pos, "%s: exit_codes: %d is negative", rr.Where, c.V)
				}
				if c.Set {
					r.ExitCodes = append(r.ExitCodes, c.V)
				}
			}
			if len(r.ExitCodes) == 0 && !r.MatchAll && len(rr.ExitCodes.Items) == 0 && len(rr.On.Items) == 0 {
				b.errorf(rr.Pos, "%s: has neither exit_codes, on nor match_all_exit_codes: true", rr.Where)
			}
			if rr.StderrMatches.Set {
				re, err := regexp.Compile(rr.StderrMatches.V)
				if err != nil {
					b.errorf(rr.StderrMatches.Pos, "%s: stderr_matches: bad regexp: %v", rr.Where, reErr(err))
				} else {
					r.StderrMatches = re
				}
			}
			b.ruleRaw[r] = rr
			if rr.RecoveryScript.Set {
				b.checkTemplate(&rr.RecoveryScript, rr.Where, true, refsLater)
			}
			h.Rules = append(h.Rules, r)
		}
	}
}

// reErr strips the "error parsing regexp: " prefix of regexp errors.
func reErr(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

// steps builds the phases and their steps.
func (b *builder) steps(raw *rawPlan) {
	switch {
	case raw.Phases.Set && raw.Steps.Set:
		b.errorf(raw.keyPos("steps"), "plan has both phases and steps; use one of them")
		return
	case raw.Steps.Set:
		if raw.Steps.Bad {
			return
		}
		if len(raw.Steps.Nodes) == 0 {
			b.consequencef(raw.Steps.Pos, "plan has no steps")
			return
		}
		b.phase(&rawPhase{rawMeta: rawMeta{Pos: raw.Steps.Pos, Where: `phase "main"`}, Name: str{V: "main", Set: true}, Steps: raw.Steps})
	case raw.Phases.Set:
		if raw.Phases.Bad {
			return
		}
		if len(raw.Phases.Items) == 0 {
			b.errorf(raw.Phases.Pos, "plan has no phases")
			return
		}
		// A phase's name is what approve --phase, its budget's line and
		// its gate's events name: two phases may not share one.
		named := map[string]Pos{}
		for _, rp := range raw.Phases.Items {
			if rp == nil {
				continue
			}
			if n := rp.Name.V; rp.Name.Set && strings.TrimSpace(n) != "" {
				if first, dup := named[n]; dup {
					b.errorf(rp.Name.Pos, "%s: name: another phase is named %q (first at line %d)", rp.Where, n, first.Line)
				} else {
					named[n] = rp.Name.Pos
				}
			}
			b.phase(rp)
		}
	default:
		b.consequencef(raw.Pos, "plan has no steps (add steps: or phases:)")
	}
}

// phase builds one phase.
func (b *builder) phase(rp *rawPhase) {
	ph := &Phase{Name: rp.Name.V, Parallel: rp.Parallel.V, Pos: rp.Pos}
	ph.Approval = b.approval(&rp.Approval, orPlan(rp.Where))
	ph.Budget = b.budget(rp.Budget, orPlan(rp.Where))
	if rp.Name.Set && strings.TrimSpace(rp.Name.V) == "" {
		b.errorf(rp.Name.Pos, "%s: name: must not be empty", rp.Where)
	}
	if rp.has("steps") && len(rp.Steps.Nodes) == 0 && !rp.Steps.Bad {
		b.errorf(rp.Steps.Pos, "%s: has no steps", orPlan(rp.Where))
	}
	for i := range rp.Steps.Nodes {
		rs := rp.Steps.item(b.parser, i)
		if rs == nil {
			continue
		}
		s := b.step(&rs.rawStepBody, rs.Where, rs.Pos)
		s.ID = rs.ID.V
		if s.Name == "" {
			s.Name = s.ID
		}
		s.Phase = ph.Name
		s.Index = len(b.plan.Steps)
		if rs.Needs.Set {
			s.NeedsSet = true
			s.Needs = []string{}
			for _, n := range rs.Needs.Items {
				if n.Set {
					s.Needs = append(s.Needs, n.V)
				}
			}
		}
		if rs.Plan.Set {
			s.Plan = rs.Plan.V
			s.PlanPath = rs.Plan.V
			if !filepath.IsAbs(s.PlanPath) {
				s.PlanPath = filepath.Join(b.plan.Dir, filepath.FromSlash(s.PlanPath))
			}
		}
		s.PlanContext, s.PlanContextKeys = b.omap(&rs.Context)
		b.requests(s, rs)
		s.Approval = b.approval(&rs.Approval, rs.Where)
		s.src.extra = rs
		b.fanOut(s, rs)
		b.cache(s, rs)
		if rs.ID.Set && rs.ID.V == "end" {
			b.errorf(rs.ID.Pos, `step "end": the id end is reserved for the end step (use end: for it)`)
		}
		if n := len(rs.ID.V); n > MaxStepID {
			b.errorf(rs.ID.Pos, "step %q: the id is %d characters long; at most %d (it names the step's log directory, and a run id of a child run)", rs.ID.V[:24]+"…", n, MaxStepID)
		}
		ph.Steps = append(ph.Steps, s)
		b.plan.Steps = append(b.plan.Steps, s)
		// A step is checked as soon as it is built (no check needs the
		// steps after it), so that its raw form can go.
		b.checkStep(s)
		s.checked()
	}
	b.plan.Phases = append(b.plan.Phases, ph)
}

// end builds the end step.
func (b *builder) end(re *rawEnd) {
	s := b.step(&re.rawStepBody, re.Where, re.Pos)
	s.ID = "end"
	if s.Name == "" {
		s.Name = "end"
	}
	s.Index = -1
	b.plan.End = s
	b.checkStep(s)
	s.checked()
}

// step builds the fields shared by steps and the end step.
func (b *builder) step(rs *rawStepBody, where string, pos Pos) *Step {
	pl := b.plan
	s := &Step{Name: rs.Name.V, StepBody: &StepBody{
		Description:    rs.Description.V,
		Run:            rs.Run.V,
		Timeout:        rs.Timeout.V,
		Dir:            rs.Dir.V,
		Shell:          rs.Shell.V,
		FailureHandler: rs.FailureHandler.V,
		HandlerTimeout: pl.HandlerTimeout,
		KillGrace:      pl.KillGrace,
		Memory:         pl.Memory,
		CPUs:           pl.CPUs,
		Executor:       pl.Executor,
		Pos:            pos,
	}}
	s.Budget = b.budget(rs.Budget, where)
	if rs.Prompt.Set {
		if rs.Run.Set {
			b.errorf(rs.Prompt.Pos, "%s: has both run and prompt (prompt is an alias of run)", where)
		} else {
			s.Run = rs.Prompt.V
			rs.Run = rs.Prompt
		}
	}
	if rs.HandlerTimeout.Set {
		s.HandlerTimeout = rs.HandlerTimeout.V
	}
	if rs.KillGrace.Set {
		s.KillGrace = rs.KillGrace.V
	}
	b.limits(s, rs, where)
	if rs.Executor.Set {
		s.Executor = rs.Executor.V
	}
	s.Slurm = slurmOf(rs.Slurm, pl.Slurm, b)
	s.Sge = sgeOf(rs.Sge, pl.Sge, b)
	if s.Executor == "sge" && s.CPUs > 0 && (s.Sge == nil || s.Sge.PE == "") {
		// Grid Engine grants CPUs only through a parallel environment.
		b.warnf(pos, "%s: cpus is not requested from Grid Engine without sge: pe (a parallel environment, such as smp)", where)
	}
	s.Env, s.EnvKeys = b.omap(&rs.Env)
	s.OnFailure = OnFailure{Kind: OnStop, RetryOnSuccess: true, MaxRetries: 1, HandlerTimeout: s.HandlerTimeout, Pos: pos}
	s.src = &stepSrc{raw: rs, where: where}
	return s
}

// slurmOf converts a slurm block, merged over base (the plan's block).
func slurmOf(rs *rawSlurm, base *Slurm, b *builder) *Slurm {
	if rs == nil {
		return base
	}
	out := &Slurm{}
	if base != nil {
		*out = *base
		out.ExtraArgs = append([]string(nil), base.ExtraArgs...)
	}
	set := func(dst *string, s str) {
		if s.Set {
			*dst = s.V
		}
	}
	set(&out.Partition, rs.Partition)
	set(&out.Account, rs.Account)
	set(&out.QOS, rs.QOS)
	set(&out.Mem, rs.Mem)
	set(&out.GPUs, rs.GPUs)
	set(&out.Time, rs.Time)
	set(&out.Mode, rs.Mode)
	if rs.CPUs.Set {
		out.CPUs = rs.CPUs.V
	}
	if rs.ExtraArgs.Set {
		out.ExtraArgs = nil
		if rs.ExtraArgs.IsLine {
			w, err := subst.Words(rs.ExtraArgs.Line.V)
			if err != nil {
				b.errorf(rs.ExtraArgs.Line.Pos, "%s: extra_args: %v", rs.Where, err)
			}
			out.ExtraArgs = w
		} else {
			for _, s := range rs.ExtraArgs.List {
				out.ExtraArgs = append(out.ExtraArgs, s.V)
			}
		}
	}
	return out
}

// sgeOf converts an sge block, merged over base (the plan's block).
func sgeOf(rs *rawSge, base *Sge, b *builder) *Sge {
	if rs == nil {
		return base
	}
	out := &Sge{}
	if base != nil {
		*out = *base
		out.ExtraArgs = append([]string(nil), base.ExtraArgs...)
	}
	set := func(dst *string, s str) {
		if s.Set {
			*dst = s.V
		}
	}
	set(&out.PE, rs.PE)
	set(&out.MemoryResource, rs.MemoryResource)
	set(&out.Queue, rs.Queue)
	set(&out.Project, rs.Project)
	set(&out.Mode, rs.Mode)
	if rs.MemoryPerSlot.Set {
		out.MemoryPerSlot = rs.MemoryPerSlot.V
	}
	if rs.ExtraArgs.Set {
		out.ExtraArgs = nil
		if rs.ExtraArgs.IsLine {
			w, err := subst.Words(rs.ExtraArgs.Line.V)
			if err != nil {
				b.errorf(rs.ExtraArgs.Line.Pos, "%s: extra_args: %v", rs.Where, err)
			}
			out.ExtraArgs = w
		} else {
			for _, s := range rs.ExtraArgs.List {
				out.ExtraArgs = append(out.ExtraArgs, s.V)
			}
		}
	}
	return out
}

// checkStep validates one step (or the end step) once all steps are known.
func (b *builder) checkStep(s *Step) {
	rs := s.src.raw
	where := s.src.where
	if s.ID != "" && s.Index >= 0 {
		where = fmt.Sprintf("step %q", s.ID)
	}
	ext := s.src.extra // nil for the end step
	b.consumer, b.usesPos = s, nil
	defer func() { b.consumer = nil }()
	b.itemVars = nil
	if s.FanOut != nil {
		b.itemVars = map[string]bool{"item": true}
		for _, k := range s.FanOut.Names {
			b.itemVars["item."+k] = true
		}
		defer func() { b.itemVars = nil }()
	}

	// run / plan
	hasPlan := ext != nil && ext.Plan.Set
	switch {
	case rs.Run.Set && hasPlan:
		b.errorf(ext.Plan.Pos, "%s: has both run and plan; use one of them", where)
	case !rs.Run.Set && !hasPlan:
		if ext != nil {
			b.consequencef(s.Pos, "%s: has neither run nor plan", where)
		} else {
			b.consequencef(s.Pos, "%s: has no run", where)
		}
	}
	if rs.Run.Set && strings.TrimSpace(s.Run) == "" {
		b.errorf(rs.Run.Pos, "%s: run is empty", where)
	}
	if ext != nil && ext.When.Set {
		b.checkWhen(s, &ext.When, where)
	}
	b.checkFrom(s, where)
	if ext != nil && ext.Context.Set && !hasPlan {
		b.errorf(ext.keyPos("context"), "%s: context is only for plan: steps (use the plan's context)", where)
	}

	// failure handler
	if rs.FailureHandler.Set {
		h := b.plan.FailureHandlers[s.FailureHandler]
		if h == nil {
			b.errorf(rs.FailureHandler.Pos, "%s: failure_handler %q is not defined in failure_handlers%s", where, s.FailureHandler, suggest(s.FailureHandler, b.handlerNames()))
		} else {
			b.checkRecovery(s, h, rs, where)
		}
	}

	// templates
	if rs.Run.Set && s.Run != "" {
		b.checkRun(s, rs, where)
	}
	for i := range rs.Env.Vals {
		b.checkTemplate(&rs.Env.Vals[i], where, false, refsAttempt)
	}
	if rs.Dir.Set {
		b.checkTemplate(&rs.Dir, where, false, refsAttempt)
	}
	if ext != nil {
		for i := range ext.Context.Vals {
			b.checkTemplate(&ext.Context.Vals[i], where, false, refsAttempt)
		}
		if hasPlan {
			b.checkSubPlan(s, ext, where)
		}
	}
	b.onFailure(s, rs, where)
	if ext != nil {
		b.checkCache(ext, where)
	}
	b.sortUses(s)
}

// checkRun validates a step's run: a /command, or a shell script.
func (b *builder) checkRun(s *Step, rs *rawStepBody, where string) {
	b.checkTemplate(&rs.Run, where, false, refsAttempt)
	if IsCommand(s.Run) {
		s.Command = true
		kind, target := b.checkCommand(s.Run, rs.Run.Pos, where+": run command")
		if kind == KindCommands {
			// The registry entry is substituted with the step's variables.
			for _, ref := range subst.Names(b.plan.Commands[target]) {
				if !b.knownVar(ref.Name, false) {
					b.errorf(rs.Run.Pos, "%s: run command %s: its commands: entry uses {%s}, which a step's run does not have", where, target, ref.Name)
					break
				}
			}
		}
		return
	}
	refs := subst.Names(s.Run)
	if len(refs) == 0 {
		return
	}
	shell := b.plan.ShellFor(s)
	if !subst.IsPOSIXShell(shell) {
		b.errorf(rs.Run.Pos, "%s: run uses {%s} but shell %q is not a POSIX shell (sh, bash, dash, zsh, ksh); substitution needs one", where, refs[0].Name, shell)
		return
	}
	b.scripts = append(b.scripts, scriptCheck{tmpl: s.Run, refs: refs, pos: rs.Run.Pos, what: where + ": run"})
}

// scriptCheck is a script to render with dummy values, to find the places
// where substitution cannot be made safe (subst.Script's errors).
type scriptCheck struct {
	tmpl string
	refs []subst.NameRef
	pos  Pos
	what string
}

// runScriptChecks renders the collected scripts, in parallel (a shell parse
// per script is the costliest part of validating a large plan), and records
// the errors in order.
func (b *builder) runScriptChecks() {
	// Plans generated from a template repeat the same scripts: render each
	// distinct script once.
	var jobs []scriptCheck
	first := map[string]int{}
	of := make([]int, len(b.scripts))
	for i, c := range b.scripts {
		j, seen := first[c.tmpl]
		if !seen {
			j = len(jobs)
			first[c.tmpl] = j
			jobs = append(jobs, c)
		}
		of[i] = j
	}
	errs := make([]error, len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := min(runtime.GOMAXPROCS(0), len(jobs)/32+1); w > 0; w-- {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				_, _, errs[i] = subst.Script(jobs[i].tmpl, dummyVars(jobs[i].refs))
			}
		})
	}
	wg.Wait()
	for i, c := range b.scripts {
		if err := errs[of[i]]; err != nil {
			b.errorf(c.pos, "%s: %v", c.what, err)
		}
	}
}

// checkRecovery checks the recovery scripts of h for a step that uses it.
func (b *builder) checkRecovery(s *Step, h *FailureHandler, rs *rawStepBody, where string) {
	shell := b.plan.ShellFor(s)
	for _, r := range h.Rules {
		if prog := scriptProgram(r.RecoveryScript); prog != "" && s.Dir == "" && !b.ruleProgChecked[r] {
			// A script that starts with a path to a program: it must be
			// there (relative to the step's directory, here the plan's).
			b.ruleProgChecked[r] = true
			if msg := b.checkProgram(prog); msg != "" {
				rr := b.ruleRaw[r]
				b.errorf(rr.RecoveryScript.Pos, "%s: recovery_script: %s", rr.Where, msg)
			}
		}
		refs := subst.Names(r.RecoveryScript)
		if len(refs) == 0 {
			continue
		}
		rr := b.ruleRaw[r]
		b.recoveryRefs(&rr.RecoveryScript, refs, where+": "+rr.Where+": recovery_script")
		if !subst.IsPOSIXShell(shell) {
			b.errorf(rs.FailureHandler.Pos, "%s: %s: recovery_script uses {%s} but the step's shell %q is not a POSIX shell", where, rr.Where, refs[0].Name, shell)
			continue
		}
		if b.ruleChecked[r] {
			continue
		}
		b.ruleChecked[r] = true
		b.scripts = append(b.scripts, scriptCheck{tmpl: r.RecoveryScript, refs: refs, pos: rr.RecoveryScript.Pos, what: rr.Where + ": recovery_script"})
	}
}

// dummyVars gives every referenced name a value, to check a template's shape.
func dummyVars(refs []subst.NameRef) map[string]string {
	m := make(map[string]string, len(refs))
	for _, r := range refs {
		m[r.Name] = "x"
	}
	return m
}

func (b *builder) handlerNames() []string {
	out := make([]string, 0, len(b.plan.FailureHandlers))
	for n := range b.plan.FailureHandlers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// onFailure normalises result_handling of a step.
func (b *builder) onFailure(s *Step, rs *rawStepBody, where string) {
	rh := rs.ResultHandling
	if rh == nil {
		return
	}
	of := &s.OnFailure
	if rh.MaxRetries.Set {
		of.MaxRetries = rh.MaxRetries.V
	}
	o := &rh.OnFailure
	if !o.Set {
		return
	}
	of.Explicit = true
	of.Pos = o.Pos
	where = where + ": on_failure"
	switch {
	case o.Scalar && strings.TrimSpace(o.Str.V) != "":
		v := strings.TrimSpace(o.Str.V)
		switch {
		case v == OnStop || v == OnContinue || v == OnRetry:
			of.Kind = v
			return
		case IsCommand(v) || isProgramLine(v):
			of.Kind = OnCommand
			of.Command = o.Str.V
			b.checkTemplate(&o.Str, where, true, refsHandler)
			b.checkCommand(o.Str.V, o.Str.Pos, where+" command")
			return
		}
		b.invalidOnFailure(s, o.Pos, where, fmt.Sprintf("%q is not stop, continue, retry or a /command%s", o.Str.V,
			suggest(v, []string{OnStop, OnContinue, OnRetry})), o.Str.V)
	case o.Scalar:
		b.invalidOnFailure(s, o.Pos, where, "is empty, not stop, continue, retry or a /command", "")
	case o.Obj != nil:
		obj := o.Obj
		if !obj.Command.Set || strings.TrimSpace(obj.Command.V) == "" {
			b.invalidOnFailure(s, o.Pos, where, "has no command", "{...}")
			return
		}
		of.Kind = OnStructured
		of.Command = obj.Command.V
		of.Args = obj.Args.Items
		if obj.RetryOnSuccess.Set {
			of.RetryOnSuccess = obj.RetryOnSuccess.V
		}
		if obj.MaxRetries.Set {
			of.MaxRetries = obj.MaxRetries.V
		}
		if obj.HandlerTimeout.Set {
			of.HandlerTimeout = obj.HandlerTimeout.V
		}
		if !IsCommand(obj.Command.V) && !isProgramLine(obj.Command.V) {
			b.errorf(obj.Command.Pos, "%s: command %q is not a /command or an absolute program path", where, obj.Command.V)
			return
		}
		b.checkTemplate(&obj.Command, where, true, refsHandler)
		for i := range obj.Args.Vals {
			if obj.Args.Vals[i].Set {
				b.checkTemplate(&obj.Args.Vals[i], where, true, refsHandler)
			}
		}
		b.checkCommand(obj.Command.V, obj.Command.Pos, where+" command")
	default:
		b.invalidOnFailure(s, o.Pos, where, "is "+kindName(o.Node)+", not stop, continue, retry or a /command", "[...]")
	}
}

// invalidOnFailure turns an unusable on_failure value into an explicit stop,
// with a warning (an error under Strict).
func (b *builder) invalidOnFailure(s *Step, pos Pos, where, problem, value string) {
	s.OnFailure.Kind = OnStop
	s.OnFailure.Invalid = value
	if value == "" {
		s.OnFailure.Invalid = `""`
	}
	if b.opts.Strict {
		b.errorf(pos, "%s %s", where, problem)
		return
	}
	b.warnf(pos, "%s %s; treated as stop", where, problem)
}

// checkCommand checks that a /command line splits into words and resolves,
// and returns how it resolves.
func (b *builder) checkCommand(line string, pos Pos, what string) (kind, target string) {
	words, err := subst.Words(line)
	if err != nil {
		hint := ""
		if first := firstWord(line); strings.Count(first, "/") > 1 {
			hint = fmt.Sprintf(" (%s is not an existing file, so this is read as a /command, which runs without a shell)", first)
		}
		b.errorf(pos, "%s: %v%s", what, err, hint)
		return "", ""
	}
	if len(words) == 0 {
		b.errorf(pos, "%s is empty", what)
		return "", ""
	}
	kind, target, err = b.plan.lookup(words[0])
	if err != nil {
		b.errorf(pos, "%s %s", what, err)
	}
	return kind, target
}

// known reports whether name may be substituted in a template.
func (b *builder) knownVar(name string, handler bool) bool {
	if b.itemVars[name] {
		return true
	}
	if b.known[name] {
		b.used[name] = true
		return true
	}
	for _, n := range stepBuiltins {
		if n == name {
			return true
		}
	}
	if handler {
		for _, n := range handlerBuiltins {
			if n == name {
				return true
			}
		}
	}
	return false
}

// checkVars reports every unknown {name} of a template (once per name); the
// template cannot use step outputs.
func (b *builder) checkVars(s *str, where string, handler bool) {
	b.checkTemplate(s, where, handler, refsNone)
}

// checkTemplate reports every unknown {name} of a template (once per name),
// and what use says of each output reference {steps.ID.outputs.KEY}: an
// error where outputs cannot be used, else kept for checkOutputUses (and,
// for the step's attempts, in its Uses).
func (b *builder) checkTemplate(s *str, where string, handler bool, use refUse) {
	if !strings.Contains(s.V, "{") {
		return
	}
	seen := map[string]bool{}
	for _, ref := range subst.Names(s.V) {
		if seen[ref.Name] || b.knownVar(ref.Name, handler) {
			continue
		}
		seen[ref.Name] = true
		if step, key, ok := subst.OutputRef(ref.Name); ok {
			b.outputRef(OutputRef{Step: step, Key: key}, b.varPos(s, ref), where, use)
			continue
		}
		hint := ""
		if !handler && contains(handlerBuiltins, ref.Name) {
			hint = " (only on_failure handlers and recovery scripts have it)"
		} else if sug := suggest(ref.Name, b.varNames(handler)); sug != "" {
			hint = sug
		}
		b.errorf(b.varPos(s, ref), "%s: unknown variable {%s}%s", where, ref.Name, hint)
	}
}

func (b *builder) varNames(handler bool) []string {
	out := Builtins(handler)
	for k := range b.known {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// varPos finds the position of the `{` of ref in the plan source: exact for
// single-line scalars and literal blocks, else the value's position.
func (b *builder) varPos(s *str, ref subst.NameRef) Pos {
	n := s.Node
	if n == nil || n.Line <= 0 || ref.Offset < 0 || ref.Offset > len(s.V) {
		return s.Pos
	}
	before := s.V[:ref.Offset]
	needle := "{" + ref.Name + "}"
	line := n.Line
	var startCol int // 1-based rune column where the search starts on the line
	var k int        // which occurrence of needle on that line we look for
	switch n.Style {
	case yaml.LiteralStyle:
		nl := strings.Count(before, "\n")
		line = n.Line + 1 + nl
		lineStart := strings.LastIndexByte(before, '\n') + 1
		k = strings.Count(before[lineStart:], needle)
		startCol = 1
	case 0, yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if strings.Contains(s.V, "\n") {
			return s.Pos
		}
		k = strings.Count(before, needle)
		startCol = n.Column
	default:
		return s.Pos
	}
	src := b.line(line)
	if src == nil {
		return s.Pos
	}
	// Skip to startCol (in runes), then find the k-th needle.
	col := 1
	i := 0
	for i < len(src) && col < startCol {
		_, w := utf8.DecodeRune(src[i:])
		i += w
		col++
	}
	rest := string(src[i:])
	for {
		j := strings.Index(rest, needle)
		if j < 0 {
			return s.Pos
		}
		if k == 0 {
			return Pos{Line: line, Col: col + utf8.RuneCountInString(rest[:j])}
		}
		k--
		col += utf8.RuneCountInString(rest[:j+1])
		rest = rest[j+1:]
	}
}

// line returns line n (1-based) of the plan source, or nil.
func (p *parser) line(n int) []byte {
	if p.lines == nil {
		p.lines = splitLines(p.data)
	}
	if n < 1 || n > len(p.lines) {
		return nil
	}
	return p.lines[n-1]
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		l := data[:i]
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		out = append(out, l)
		if i < len(data) {
			i++
		}
		data = data[i:]
	}
	return out
}

// checkSubPlan validates a plan: step's child plan, and rejects plans that
// include themselves.
func (b *builder) checkSubPlan(s *Step, ext *rawStep, where string) {
	path := filepath.Clean(s.PlanPath)
	self := filepath.Clean(filepath.Join(b.plan.Dir, filepath.Base(b.file)))
	stack := append(append([]string(nil), b.opts.stack...), self)
	for i, p := range stack {
		if p == path {
			chain := make([]string, 0, len(stack)-i+1)
			for _, q := range stack[i:] {
				chain = append(chain, filepath.Base(q))
			}
			chain = append(chain, filepath.Base(path))
			b.errorf(ext.Plan.Pos, "%s: plan %s includes itself (%s)", where, s.Plan, strings.Join(chain, " -> "))
			return
		}
	}
	if len(stack) > 16 {
		b.errorf(ext.Plan.Pos, "%s: plan %s: sub-plans nested more than 16 deep", where, s.Plan)
		return
	}
	sets := map[string]string{}
	for _, k := range s.PlanContextKeys {
		sets[k] = s.PlanContext[k]
	}
	key := path + "\x00" + strings.Join(s.PlanContextKeys, "\x00")
	if b.subPlans == nil {
		b.subPlans = map[string]error{}
	}
	err, done := b.subPlans[key]
	if !done {
		var child *Plan
		child, err = Load(path, Options{Sets: sets, SetKeys: s.PlanContextKeys, setsFrom: "context", Strict: b.opts.Strict, GOOS: b.opts.GOOS, NoProgramChecks: b.opts.NoProgramChecks, stack: stack})
		b.subPlans[key] = err
		if child != nil {
			if b.childNames == nil {
				b.childNames = map[string]string{}
				b.childOutputs = map[string][]string{}
			}
			b.childNames[key] = child.Name
			b.childOutputs[key] = child.OutputKeys
		}
	}
	s.ChildName = b.childNames[key]
	s.ChildOutputs = b.childOutputs[key]
	if err != nil {
		msg := err.Error()
		if inv, ok := err.(*Invalid); ok && len(inv.Errors) > 0 && inv.Errors[0].Line == 0 && inv.Errors[0].File == path {
			msg = inv.Errors[0].Message
		}
		b.errorf(ext.Plan.Pos, "%s: plan %s: %s", where, s.Plan, msg)
	}
}

// scriptProgram is the program a shell script starts with when that is a
// plain path (./x.sh, ../bin/x, /opt/x), or "": a bare name may be a shell
// builtin or function, and anything with shell syntax or {vars} is only
// known when it runs. Leading lines that only export variables (export
// A="$B" C=d, as imported Torc scripts start) are skipped.
func scriptProgram(script string) string {
	for {
		line, rest, ok := strings.Cut(script, "\n")
		if !ok || !onlyExports(line) {
			break
		}
		script = rest
	}
	f := strings.Fields(script)
	if len(f) == 0 {
		return ""
	}
	p := f[0]
	if !(strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/")) ||
		strings.ContainsAny(p, "{}$`\"'*?[;|&<>()~\\") {
		return ""
	}
	return p
}

// onlyExports reports whether a script line is `export` of assignments
// whose values run nothing (no command substitution, no operators).
func onlyExports(line string) bool {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "export" {
		return false
	}
	for _, w := range f[1:] {
		name, val, ok := strings.Cut(w, "=")
		if !ok || !shellVar.MatchString(name) || strings.ContainsAny(val, "`'\\;|&<>()") {
			return false
		}
	}
	return true
}

// checkProgram is Plan.checkProgram unless the caller runs nothing.
func (b *builder) checkProgram(prog string) string {
	if b.opts.NoProgramChecks {
		return ""
	}
	return b.plan.checkProgram(prog)
}
