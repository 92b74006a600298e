package run

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
	"github.com/faber-run/faber/state"
)

// Placeholders for the built-ins known only while a run runs: the variable's
// name in angle brackets.
const (
	PhRunID      = "<run_id>"
	PhAttempt    = "<attempt>"
	PhError      = "<error>"
	PhExitCode   = "<exit_code>"
	PhStdoutFile = "<stdout_file>"
	PhStderrFile = "<stderr_file>"
)

// Kinds of a dry-run step's command beyond exec.KindScript and the
// spec.Kind* of a /command.
const KindPlan = "plan"

// DryPlan is the JSON document of `faber run --dry-run --ui json`. Fields
// may be added (a field per step saying whether it would be cached, for one);
// existing ones keep their meaning.
type DryPlan struct {
	Plan string `json:"plan"`
	File string `json:"file"`
	Jobs int    `json:"jobs"`
	// Part is the part of the plan shown (faber run PLAN STEP... --from
	// STEP), nil for the whole plan.
	Part   *state.Part `json:"part,omitempty"`
	Levels [][]string  `json:"levels"`
	Steps  []*DryStep  `json:"steps"`
	// Capacity is the run's resolved capacity, set by the caller for a
	// plan that requests resources or declares them (UsesCapacity).
	Capacity *DryRequest `json:"capacity,omitempty"`
	// Notify are the plan's notifications, which a dry run does not run.
	Notify []*DryNotify `json:"notify,omitempty"`
	// Budgets are the plan's and the phases' budgets, as "plan $20.00",
	// `phase "fix" 40 turns` (README "Budgets"); the steps' own are on
	// them.
	Budgets []string `json:"budgets,omitempty"`
}

// DryNotify is one of the plan's notifications: the kinds it is run on,
// its command as written (its variables are known when the event comes)
// and its timeout.
type DryNotify struct {
	On      []string `json:"on"`
	Run     string   `json:"run"`
	Timeout string   `json:"timeout"`
}

// DryRequest is a step's request (cpus, memory, gpus, pools), or the run's
// capacity; Text is how faber writes it ("2 CPUs, 6GiB, 1 GPU, pool db").
type DryRequest struct {
	CPUs        int      `json:"cpus,omitempty"`
	MemoryBytes int64    `json:"memory_bytes,omitempty"`
	GPUs        int      `json:"gpus,omitempty"`
	Pools       []string `json:"pools,omitempty"`
	Text        string   `json:"text"`
}

// DryCapacity describes a run's capacity for a dry run, the plan's pools
// (name and size) at the end of its text.
func DryCapacity(c spec.Capacity, p *spec.Plan) *DryRequest {
	t := c.String()
	for i, name := range p.PoolNames {
		sep := ", "
		if i == 0 {
			sep = "; pools "
		}
		t += sep + name + " " + strconv.Itoa(p.Pools[name])
	}
	return &DryRequest{CPUs: c.CPUs, MemoryBytes: c.Memory, GPUs: c.GPUs, Text: t}
}

// UsesCapacity reports whether the plan declares resources: or pools:, or
// a step requests something: only then does a dry run show the capacity.
func UsesCapacity(p *spec.Plan) bool {
	if p.Resources != (spec.Capacity{}) || len(p.Pools) > 0 {
		return true
	}
	for _, s := range p.Steps {
		if s.RequestText() != "" {
			return true
		}
	}
	return false
}

// DryStep is one step as a run would start it.
type DryStep struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Phase         string   `json:"phase"`
	Level         int      `json:"level"` // from 1; the end step: the last level + 1
	End           bool     `json:"end"`
	Needs         []string `json:"needs"`
	NeedsExplicit bool     `json:"needs_explicit"`
	// Kind is script, commands, file, agent, program (a /command's
	// resolution, SPEC §4.1) or plan (a sub-plan step).
	Kind string `json:"kind"`
	// Command is the run: line with values substituted in place, for
	// reading; Argv is what is executed (for a script, the shell with -c and
	// the script as the runner renders it, reading values from SubEnv).
	Command     string            `json:"command"`
	Argv        []string          `json:"argv"`
	SubEnv      []string          `json:"sub_env"`
	PlanFile    string            `json:"plan_file,omitempty"`
	PlanContext map[string]string `json:"plan_context,omitempty"`
	Shell       string            `json:"shell,omitempty"`
	Dir         string            `json:"dir"`
	Timeout     *string           `json:"timeout"`
	Executor    string            `json:"executor"`
	// ExecPrefix is the engine's own command line (srun … -- for
	// executor: slurm), nil on this machine.
	ExecPrefix     []string     `json:"-"`
	FailureHandler *DryHandler  `json:"failure_handler"`
	OnFailure      DryOnFailure `json:"on_failure"`
	// Cache is, for a step with inputs, what the cache would do.
	Cache *DryCache `json:"cache,omitempty"`
	// FanOut names an item step's fan-out step; Item is its {item} and
	// ItemFields its {item.<name>} values.
	FanOut     string            `json:"fan_out,omitempty"`
	Item       *string           `json:"item,omitempty"`
	ItemFields map[string]string `json:"item_fields,omitempty"`
	ItemNames  []string          `json:"-"` // ItemFields' names in order
	// Budget is the step's own budget: (each item's, on a fan-out), as
	// "$1.00 · 40 turns · 3 attempts"; "" for none (README "Budgets").
	Budget string `json:"budget,omitempty"`
	// Requests is what the step reserves of the run's capacity while it
	// runs (a join's: what each of its items does); nil for nothing.
	Requests *DryRequest `json:"requests,omitempty"`
	// Join describes the fan-out of a join step (kind join), which runs no
	// process: its Command is the items' run line with <item> in place of
	// {item}.
	Join *FanOut `json:"join,omitempty"`
	// When is the step's condition (when:), evaluated when it is ready.
	When string `json:"when,omitempty"`
}

// KindJoin is the kind of a fan-out's join step in a dry run.
const KindJoin = "join"

// DryHandler is a step's failure_handler with its rules.
type DryHandler struct {
	Name  string     `json:"name"`
	Rules []*DryRule `json:"rules"`
}

// DryRule is one exit-code rule, its recovery script substituted.
type DryRule struct {
	ExitCodes []int `json:"exit_codes"`
	MatchAll  bool  `json:"match_all_exit_codes"`
	// On are the causes it matches besides exit codes (oom, timeout,
	// rejected, budget).
	On             []string `json:"on,omitempty"`
	StderrMatches  string   `json:"stderr_matches,omitempty"`
	MaxRetries     int      `json:"max_retries"`
	Delay          string   `json:"delay,omitempty"`
	Backoff        string   `json:"backoff"`
	MaxDelay       string   `json:"max_delay,omitempty"`
	RecoveryScript string   `json:"recovery_script,omitempty"`
}

// DryOnFailure is a step's on_failure, a /command resolved.
type DryOnFailure struct {
	Kind     string `json:"kind"` // stop, continue, retry, command, structured
	Explicit bool   `json:"explicit"`
	// Invalid is the value that was treated as stop (with a warning).
	Invalid        string `json:"invalid,omitempty"`
	MaxRetries     *int   `json:"max_retries,omitempty"`
	RetryOnSuccess *bool  `json:"retry_on_success,omitempty"`
	// Command is the handler line substituted; Resolved how it resolved
	// (commands, file, agent, program); Argv the resolved argv and
	// HandlerCommand it shell-quoted, as step_handler_invoked records it.
	Command        string   `json:"command,omitempty"`
	Resolved       string   `json:"resolved,omitempty"`
	Argv           []string `json:"argv,omitempty"`
	HandlerCommand string   `json:"handler_command,omitempty"`
	Timeout        string   `json:"timeout,omitempty"`
}

// DryRun describes what `faber run` would do with a validated plan, and
// runs and writes nothing: every step, level by level, the end step last,
// with its command and handlers resolved by the runner's own functions
// (exec.StepVars, exec.StepArgv, spec.ResolveCommand, ...) with placeholders
// for the built-ins that only a run knows, and for a step with inputs what
// the cache would do (noCache and force as run's --no-cache and --force).
// A plan the runner could not start is a usage error. Without allItems,
// the items of a fan-out past the first ShownItems, which the text does not
// show, are described by id, level, needs and fan-out only.
func DryRun(stateDir string, p *spec.Plan, jobs int, noCache bool, force []string, allItems bool) (*DryPlan, error) {
	ReadItemsNow(p)
	dp, err := buildDry(p, jobs, allItems)
	if err != nil {
		return nil, usage(err)
	}
	dryCacheOf(stateDir, p, dp, noCache, force)
	return dp, nil
}

// buildDry describes every step of a validated plan, level by level, the
// end step last.
func buildDry(p *spec.Plan, jobs int, allItems bool) (*DryPlan, error) {
	dp := &DryPlan{Plan: p.Name, File: p.File, Jobs: exec.Jobs(jobs, p), Levels: LevelIDs(p), Steps: []*DryStep{}}
	if p.Budget != nil {
		dp.Budgets = append(dp.Budgets, "plan "+p.Budget.Text())
	}
	for _, ph := range p.Phases {
		if ph.Budget != nil {
			dp.Budgets = append(dp.Budgets, fmt.Sprintf("phase %q %s", ph.Name, ph.Budget.Text()))
		}
	}
	for i, level := range p.Levels() {
		for _, s := range level {
			if !allItems && !itemShown(s) {
				dp.Steps = append(dp.Steps, &DryStep{ID: s.ID, Name: s.Name, Phase: s.Phase, Level: i + 1,
					Needs: s.Deps, NeedsExplicit: s.NeedsSet, FanOut: s.FanOutOf})
				continue
			}
			ds, err := buildDryStep(p, s)
			if err != nil {
				return nil, err
			}
			ds.Level = i + 1
			dp.Steps = append(dp.Steps, ds)
		}
	}
	if p.End != nil {
		ds, err := buildDryStep(p, p.End)
		if err != nil {
			return nil, err
		}
		ds.Level, ds.End = len(dp.Levels)+1, true
		dp.Steps = append(dp.Steps, ds)
	}
	for _, n := range p.Notify {
		dp.Notify = append(dp.Notify, &DryNotify{On: n.On, Run: n.Run, Timeout: ShortDur(n.Timeout)})
	}
	return dp, nil
}

func buildDryStep(p *spec.Plan, s *spec.Step) (*DryStep, error) {
	ds := &DryStep{ID: s.ID, Name: s.Name, Phase: s.Phase, Needs: s.Deps, NeedsExplicit: s.NeedsSet, Executor: "local", SubEnv: []string{}}
	if s.When != nil {
		ds.When = s.When.Src
	}
	if ds.Needs == nil {
		ds.Needs = []string{}
	}
	ds.Budget = s.Budget.Text()
	if t := s.RequestText(); t != "" && s != p.End {
		r := s.Request()
		ds.Requests = &DryRequest{CPUs: r.CPUs, MemoryBytes: r.Memory, GPUs: r.GPUs, Pools: s.Pools, Text: t}
	}
	vars := exec.StepVars(p, s, PhRunID, PhAttempt, nil)
	addOutputPh(vars, p, s)
	if j := FanOutOf(s); j != nil {
		return dryJoin(ds, p, s, j, vars)
	}
	if s.Item != nil {
		v := s.Item.Value
		ds.FanOut, ds.Item = s.FanOutOf, &v
		if len(s.Item.Fields) > 0 {
			ds.ItemFields, ds.ItemNames = s.Item.Fields, s.Item.Names
		}
	}
	ds.Dir = exec.WorkDir(p, s, vars)
	if s.Timeout > 0 {
		t := ShortDur(s.Timeout)
		ds.Timeout = &t
	}
	if s.PlanPath != "" {
		ds.Kind, ds.PlanFile, ds.Command = KindPlan, s.PlanPath, s.Plan
		keys, vals, err := exec.ChildContext(s, vars)
		if err != nil {
			return nil, err
		}
		if len(keys) > 0 {
			ds.PlanContext = vals
		}
	} else {
		argv, env, kind, err := exec.StepArgv(p, s, vars)
		if err != nil {
			return nil, err
		}
		ds.Kind, ds.Argv = kind, argv
		if env != nil {
			ds.SubEnv = env
		}
		if kind == exec.KindScript {
			ds.Shell = p.ShellFor(s)
		}
		// The line as a reader would write it with the values in place;
		// Argv and SubEnv say exactly how the values are passed.
		ds.Command, err = subst.Expand(strings.TrimRight(s.Run, "\n"), vars)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", s.ID, err)
		}
		// How the step's engine runs it: the argv under the engine, and
		// the engine's own part of it.
		throttle := 0
		if j := p.Step(s.FanOutOf); s.FanOutOf != "" && j != nil && j.FanOut != nil {
			throttle = j.FanOut.MaxParallel
		}
		ds.Executor, ds.Argv, ds.ExecPrefix = exec.DescribeExecutor(s, PhRunID, PhAttempt, ds.Dir, argv, throttle)
	}
	hvars := exec.StepVars(p, s, PhRunID, PhAttempt, &exec.FailValues{
		Error: PhError, ExitCode: PhExitCode, StdoutFile: PhStdoutFile, StderrFile: PhStderrFile})
	addOutputPh(hvars, p, s)
	if fh := p.FailureHandlers[s.FailureHandler]; fh != nil {
		dh := &DryHandler{Name: fh.Name}
		for _, r := range fh.Rules {
			dr := &DryRule{ExitCodes: r.ExitCodes, MatchAll: r.MatchAll, On: r.On, MaxRetries: r.MaxRetries, Backoff: r.Backoff}
			if dr.ExitCodes == nil {
				dr.ExitCodes = []int{}
			}
			if dr.Backoff == "" {
				dr.Backoff = spec.BackoffFixed
			}
			if r.StderrMatches != nil {
				dr.StderrMatches = r.StderrMatches.String()
			}
			if r.Delay > 0 {
				dr.Delay = ShortDur(r.Delay)
			}
			if r.MaxDelay > 0 {
				dr.MaxDelay = ShortDur(r.MaxDelay)
			}
			if r.RecoveryScript != "" {
				// Rendered as the runner renders it, so that a script it
				// could not run fails here too.
				if _, _, err := exec.ScriptArgv(p, s, r.RecoveryScript, hvars); err != nil {
					return nil, fmt.Errorf("step %q: failure_handler %s: recovery_script: %w", s.ID, fh.Name, err)
				}
				dr.RecoveryScript, _ = subst.Expand(strings.TrimRight(r.RecoveryScript, "\n"), hvars)
			}
			dh.Rules = append(dh.Rules, dr)
		}
		ds.FailureHandler = dh
	}
	of := s.OnFailure
	ds.OnFailure = DryOnFailure{Kind: of.Kind, Explicit: of.Explicit, Invalid: of.Invalid}
	switch of.Kind {
	case spec.OnRetry:
		n := of.MaxRetries
		ds.OnFailure.MaxRetries = &n
	case spec.OnCommand, spec.OnStructured:
		var args []spec.Arg
		if of.Kind == spec.OnStructured {
			args = of.Args
		}
		argv, kind, err := p.ResolveCommand(of.Command, args, hvars)
		if err != nil {
			return nil, fmt.Errorf("step %q: on_failure: %w", s.ID, err)
		}
		n, ros := of.MaxRetries, of.RetryOnSuccess
		ds.OnFailure.MaxRetries, ds.OnFailure.RetryOnSuccess = &n, &ros
		ds.OnFailure.Command, _ = subst.Expand(of.Command, hvars)
		ds.OnFailure.Resolved, ds.OnFailure.Argv = kind, argv
		ds.OnFailure.HandlerCommand = subst.Join(argv)
		ds.OnFailure.Timeout = ShortDur(exec.HandlerTimeout(p, s))
	}
	return ds, nil
}

// dryJoin describes the join step of a fan-out: it runs no process; its
// command is the items' run line with <item> placeholders, for reading.
func dryJoin(ds *DryStep, p *spec.Plan, s *spec.Step, j *FanOut, vars map[string]string) (*DryStep, error) {
	for k, v := range itemVars(s) {
		vars[k] = v
	}
	ds.Kind, ds.Join, ds.Executor = KindJoin, j, "none"
	ds.Dir = exec.WorkDir(p, s, vars)
	if s.PlanPath != "" {
		ds.Command = s.Plan
	} else {
		var err error
		ds.Command, err = subst.Expand(strings.TrimRight(s.Run, "\n"), vars)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", s.ID, err)
		}
	}
	ds.OnFailure = DryOnFailure{Kind: s.OnFailure.Kind, Explicit: s.OnFailure.Explicit, Invalid: s.OnFailure.Invalid}
	return ds, nil
}

// LevelIDs is p.Levels() as step ids.
func LevelIDs(p *spec.Plan) [][]string {
	levels := p.Levels()
	out := make([][]string, len(levels))
	for i, l := range levels {
		out[i] = make([]string, len(l))
		for j, s := range l {
			out[i][j] = s.ID
		}
	}
	return out
}

// ShortDur formats a duration as a plan would write it: 10m, 1h30m, 90s as 1m30s.
func ShortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// DryCache is what a run would do with a step that declares inputs: skip
// it (cached) or run it, and why. A dry run reads the cache and hashes the
// inputs, but runs no cache_key command: it takes their output to be what
// the entry recorded, and says so.
type DryCache struct {
	Cached  bool   `json:"cached"`
	Reason  string `json:"reason"`
	FromRun string `json:"from_run,omitempty"`
	Attempt int    `json:"from_attempt,omitempty"`
	Key     string `json:"key,omitempty"`
	// KeyCmdsAssumed: the step has cache_key commands, which a dry run
	// does not run; their output was assumed unchanged.
	KeyCmdsAssumed bool `json:"key_cmds_assumed,omitempty"`
}

// dryCacheOf decides each step's dry-run cache line, in run order: a step's
// key needs its upstream's, which are what a run would give them (the
// cached key, or the key of a step that would run and succeed).
func dryCacheOf(stateDir string, p *spec.Plan, dp *DryPlan, noCache bool, force []string) {
	store := Cache{StateDir: stateDir}
	keys := map[string]string{}
	forced := map[string]bool{}
	for _, id := range force {
		forced[id] = true
	}
	for _, ds := range dp.Steps {
		if ds.End {
			continue
		}
		s := p.Step(ds.ID)
		if s == nil {
			continue
		}
		if s.Join && s.FanOut != nil {
			items := make([]string, len(s.FanOut.ItemIDs))
			for i, id := range s.FanOut.ItemIDs {
				items[i] = keys[id]
			}
			keys[s.ID] = exec.JoinKey(items)
			continue
		}
		keys[s.ID] = exec.NeedKey(nil, p, s)
		if !s.Cache.Enabled() || s.PlanPath != "" {
			continue
		}
		needs := map[string]string{}
		for _, d := range s.Deps {
			needs[d] = keys[d]
		}
		e, _ := store.Get(p.Name, s.ID)
		keyOut := ""
		c := &DryCache{}
		if len(s.Cache.KeyCmds) > 0 {
			c.KeyCmdsAssumed = true
			if e != nil {
				keyOut = e.KeyOut
			}
		}
		ds.Cache = c
		pr, err := exec.ProbeCache(context.Background(), p, s, needs, keyOut)
		if err != nil {
			c.Reason = "cannot compute the key: " + err.Error()
			continue
		}
		c.Key = pr.Key
		keys[s.ID] = pr.Key
		switch {
		case noCache:
			c.Reason = "cache not read (--no-cache)"
		case forced[s.ID] || forced[s.FanOutOf]:
			c.Reason = "forced (--force)"
		default:
			c.Reason = exec.KeyMiss(e, pr)
			if c.Reason == "" {
				c.Reason = exec.OutputsMiss(context.Background(), p, s, e)
			}
		}
		if c.Reason == "" {
			c.Cached, c.FromRun, c.Attempt = true, e.RunID, e.Attempt
		}
	}
}

// addOutputPh gives each output reference in the step's templates
// ({steps.ID.outputs.KEY}) the placeholder <steps.ID.outputs.KEY>: its value
// is known once that step has run.
func addOutputPh(vars map[string]string, p *spec.Plan, s *spec.Step) {
	tmpls := append([]string{s.Run, s.Dir}, p.HandlerTemplates(s)...)
	for _, v := range s.Env {
		tmpls = append(tmpls, v)
	}
	for _, v := range s.PlanContext {
		tmpls = append(tmpls, v)
	}
	for _, name := range spec.OutputNames(tmpls...) {
		vars[name] = "<" + name + ">"
	}
}
