// Package spec holds faber's plan format: the types, parsing of YAML and JSON
// with line:col positions, validation, the dependency graph and /command
// resolution. It starts no processes and opens no store.
package spec

import (
	"regexp"
	"time"
)

// Pos is a position in a plan file. Line and Col are 1-based; zero means unknown.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Diagnostic is one validation error or warning, tied to a place in a plan file.
type Diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
	// Consequence marks an error that usually follows from another one
	// (a step with no run: after an unknown field or a run: that is not
	// a string): the one line of faber run names a cause first.
	Consequence bool `json:"-"`
}

// FirstCause is the error to show when only one is shown: the first that
// is not a consequence of another (Diagnostic.Consequence), else the first.
func (inv *Invalid) FirstCause() Diagnostic {
	for _, d := range inv.Errors {
		if !d.Consequence {
			return d
		}
	}
	return inv.Errors[0]
}

// Error formats the diagnostic as "file:line:col: message" (line/col omitted when unknown).
func (d Diagnostic) Error() string {
	s := d.File
	if d.Line > 0 {
		s += ":" + itoa(d.Line)
		if d.Col > 0 {
			s += ":" + itoa(d.Col)
		}
	}
	if s != "" {
		s += ": "
	}
	return s + d.Message
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// Stop modes.
const (
	StopDrain  = "drain"
	StopCancel = "cancel"
)

// Plan is a parsed and validated plan. Maps that users write in order (context,
// env, commands) keep their keys in file order in the matching *Keys slices.
type Plan struct {
	File string // path as given on the command line
	Dir  string // absolute directory of the plan file; default working dir of steps

	Name        string
	Description string
	Context     map[string]string // after --set overrides
	ContextKeys []string          // file order, then --set-only keys
	// Secrets are the context variables whose values faber never shows:
	// masked as *** in events, status, the live view and MCP answers.
	Secrets          []string
	Jobs             int    // 0 = not set (runner uses CPU count)
	Shell            string // "" = default (sh; cmd on Windows)
	Env              map[string]string
	EnvKeys          []string
	UsePendingFailed bool
	StopMode         string // StopDrain (default) or StopCancel
	Agent            []string
	Commands         map[string]string // "/name" -> command line
	FailureHandlers  map[string]*FailureHandler
	HandlerTimeout   time.Duration // 0 = default 30m
	KillGrace        time.Duration // 0 = default 10s
	Memory           int64         // default memory limit of an attempt, bytes; 0 = none
	CPUs             int           // default CPU limit of an attempt; 0 = none
	// Resources is the run's capacity as the plan writes it (resources:);
	// a zero field is not set (the machine's, or a flag's: ResolveCapacity).
	Resources Capacity
	// Pools are the plan's pools: name -> how many steps may hold it at
	// once; PoolNames in file order.
	Pools     map[string]int
	PoolNames []string
	Executor  string // "" or "local" (slurm later)
	Slurm     *Slurm // plan-level slurm block, or nil
	Sge       *Sge   // plan-level sge block, or nil

	Phases []*Phase
	Steps  []*Step // every step in plan order, excluding End
	End    *Step   // explicit end step, or nil

	// Outputs are what the plan publishes, run as a sub-plan that
	// succeeded (outputs:): key -> template, keys in file order.
	Outputs    map[string]string
	OutputKeys []string

	// Notify are the commands run on chosen events (notify:), in file
	// order (README "Notifications").
	Notify []*Notify

	// Budget is the plan's budget: (every step's spending together), or
	// nil (README "Budgets").
	Budget *Budget

	Warnings []Diagnostic // e.g. invalid on_failure values treated as stop

	goos string           // target OS for the default shell ("" = runtime.GOOS)
	byID map[string]*Step // steps by id, set by Parse (nil for hand-built plans)
}

// Slurm holds the settings of a `slurm:` block. A step's block is merged over
// the plan's: fields the step sets win, the others come from the plan.
type Slurm struct {
	Partition string
	Account   string
	QOS       string
	CPUs      int // 0 = not set
	Mem       string
	GPUs      string
	Time      string
	ExtraArgs []string
	// Mode is "batch" (sbatch), "blocking" (srun) or "" (not set: batch).
	// Left out of JSON when not set, so that definition hashes stay what
	// they were before there was a mode.
	Mode string `json:",omitempty"`
}

// Sge holds the settings of an `sge:` block (Grid Engine), merged as a
// slurm: block is. It is a step's definition on Grid Engine (its JSON goes
// into the definition hash): every field is left out when not set.
type Sge struct {
	PE             string   `json:"pe,omitempty"`
	MemoryResource string   `json:"memory_resource,omitempty"` // "" = h_vmem
	MemoryPerSlot  bool     `json:"memory_per_slot,omitempty"`
	Queue          string   `json:"queue,omitempty"`
	Project        string   `json:"project,omitempty"`
	ExtraArgs      []string `json:"extra_args,omitempty"`
	Mode           string   `json:"mode,omitempty"` // "batch", "blocking", "" (batch)
}

// Phase is a named group of steps.
type Phase struct {
	Name     string
	Parallel bool
	Steps    []*Step
	Pos      Pos
	// Approval is the phase's gate (approval:), or nil: decided once, it
	// holds the phase's entry steps (Step.PhaseGate).
	Approval *Approval
	// Budget is the phase's budget: (its steps' spending together), or nil.
	Budget *Budget
}

// PhaseNamed is the first phase of p named name, nil for none.
func (p *Plan) PhaseNamed(name string) *Phase {
	for _, ph := range p.Phases {
		if ph.Name == name {
			return ph
		}
	}
	return nil
}

// Step is one unit of work. What tells the item steps of a fan-out apart
// is the Step's own (its id, name, place and dependencies, and the fan-out
// fields); the rest, the definition as written and checked, is its
// StepBody, which a fan-out's items share with their fan-out step: one
// body, not a copy of some 600 bytes for each of up to 100,000 items. A
// body is written only while the plan is built, before any item is made
// (TestStepBodyWrites holds every write of a body field to that).
type Step struct {
	ID    string
	Name  string   // defaults to ID
	Index int      // position in Plan.Steps; -1 for the end step
	Deps  []string // resolved dependencies (explicit or implicit), plan order

	// FanOut is set on the join step of a fan-out (foreach:/matrix:): it
	// runs no process and succeeds when every item did.
	FanOut *FanOut
	Join   bool
	// Item and FanOutOf are set on an item step <id>[<key>] of a fan-out.
	Item     *Item
	FanOutOf string

	*StepBody
}

// StepBody is a step's definition: every step has one.
type StepBody struct {
	Description string
	Phase       string

	Run      string        // shell script, or a /command line (see IsCommand)
	Timeout  time.Duration // 0 = none
	Needs    []string      // as written; nil when not written
	NeedsSet bool          // true when `needs:` was written (even empty)
	// Command is true when Run is a /command line (IsCommand): it is resolved
	// with Plan.ResolveCommand and run without a shell.
	Command bool
	// PhaseGate is set on an entry step of a phase with a gate (a step
	// with no needs inside its phase): it waits for the phase's decision
	// first. (The three bools share a word: a body of 568 bytes and Go's
	// 8-byte header take 576, one more word would take 640.)
	PhaseGate      bool
	Env            map[string]string
	EnvKeys        []string
	Dir            string        // as written (may hold {vars}); "" = plan dir
	Shell          string        // step override of the plan shell; "" = plan's
	FailureHandler string        // name in Plan.FailureHandlers, or ""
	HandlerTimeout time.Duration // the step's, else the plan's; 0 = default 30m
	KillGrace      time.Duration // the step's, else the plan's; 0 = default 10s
	// Memory (bytes) and CPUs limit one attempt: the step's, else the
	// plan's; 0 = no limit.
	Memory int64
	CPUs   int
	// GPUs is how many GPU devices the step requests (0 = none); Pools
	// are the pools it holds one unit of while it runs. With CPUs and
	// Memory they are its request (README "Capacity and requests").
	GPUs      int
	Pools     []string
	OnFailure OnFailure

	// Executor is the step's executor ("" or "local", or "slurm"), the
	// plan's when the step does not set one.
	Executor string
	// Slurm is the step's slurm block merged over the plan's, or nil.
	Slurm *Slurm
	// Sge is the step's sge block merged over the plan's, or nil.
	Sge *Sge `json:",omitempty"`
	// Plan is a sub-plan step's `plan:` as written ("" for a run step);
	// PlanPath is it resolved against the plan's directory.
	Plan     string
	PlanPath string
	// PlanContext is the `context:` passed to the child plan (values may hold
	// {vars}), with its keys in file order.
	PlanContext     map[string]string
	PlanContextKeys []string
	// ChildName is the child plan's name (set by validation), used to
	// name the child run; ChildOutputs the keys its outputs: declares.
	ChildName    string
	ChildOutputs []string

	Pos Pos // position of the step's mapping (its `id:` key where known)

	// Cache holds inputs:, outputs:, cache_key: and cache: (spec/cache.go);
	// nil when the step declares no inputs (it is never cached).
	Cache *Cache

	// Uses are the outputs of upstream steps that the step's attempts
	// substitute ({steps.ID.outputs.KEY} in run, env, dir and a sub-plan
	// step's context), each once, in the order first written; nil for none.
	// Handlers and recovery scripts find theirs when they run.
	Uses []OutputRef
	// When is the step's condition (when:), or nil; items of a fan-out
	// share their fan-out step's.
	When *When
	// Approval is the step's own gate (approval:), or nil.
	Approval *Approval
	// Budget is the step's own budget: (on a fan-out, each item's), or
	// nil; its phase's and the plan's apply too (README "Budgets"). Not
	// in the definition hash: raising it with resume --plan re-runs
	// nothing.
	Budget *Budget `json:"-"`

	// src is what the step was built from, while the plan is built.
	src *stepSrc
}

// stepSrc is what the builder keeps of a step's raw form. While the step
// is built and checked: its body, how messages name it, and (not for the end
// step) its id, needs, plan and context. After the check only the needs as
// written, which resolveDeps reads once every step is known; a plan may
// have 100,000 steps, so nothing more of them stays.
type stepSrc struct {
	raw   *rawStepBody
	where string
	extra *rawStep
	needs *list[str]
}

// writtenNeeds is the step's `needs:` as written while the plan is built;
// nil when it wrote none, for the end step, and afterwards.
func (s *Step) writtenNeeds() *list[str] {
	switch {
	case s.src == nil:
		return nil
	case s.src.extra != nil && s.src.extra.Needs.Set:
		return &s.src.extra.Needs
	}
	return s.src.needs
}

// checked drops the step's raw form, keeping only a copy of its written
// needs (a pointer into the raw form would keep all of it alive).
func (s *Step) checked() {
	needs := s.writtenNeeds()
	s.src = nil
	if needs != nil {
		kept := *needs
		s.src = &stepSrc{needs: &kept}
	}
}

// On-failure kinds.
const (
	OnStop       = "stop"
	OnContinue   = "continue"
	OnRetry      = "retry"
	OnCommand    = "command"
	OnStructured = "structured"
)

// OnFailure is a step's result_handling.on_failure, normalised.
type OnFailure struct {
	Kind           string        // OnStop (also the default), OnContinue, OnRetry, OnCommand, OnStructured
	Explicit       bool          // written in the plan (an invalid value counts as explicit stop)
	Invalid        string        // the invalid value that was turned into stop, if any
	Command        string        // OnCommand: the whole template line; OnStructured: the command
	Args           []Arg         // OnStructured: args in file order
	RetryOnSuccess bool          // default true
	MaxRetries     int           // default 1 (retry keyword and handlers)
	HandlerTimeout time.Duration // structured handler's, else the step's, else the plan's; 0 = default 30m
	Pos            Pos
}

// Arg is one structured-handler argument: --Key Value, or --Key alone when Flag.
type Arg struct {
	Key   string
	Value string
	Flag  bool // value was boolean true: emit only --Key
	Omit  bool // value was boolean false: emit nothing
}

// FailureHandler is a named, ordered list of exit-code rules.
type FailureHandler struct {
	Name  string
	Rules []*Rule
	Pos   Pos
}

// Backoff kinds.
const (
	BackoffFixed       = "fixed"
	BackoffExponential = "exponential"
)

// Rule is one exit-code rule of a failure handler.
type Rule struct {
	ExitCodes      []int
	MatchAll       bool
	StderrMatches  *regexp.Regexp // nil when not set
	RecoveryScript string
	MaxRetries     int // default 3
	Delay          time.Duration
	Backoff        string // BackoffFixed (default) or BackoffExponential
	MaxDelay       time.Duration
	// On lists the causes (CauseOOM, CauseTimeout) the rule matches
	// besides its exit codes.
	On []string
	// MemoryFactor and TimeoutFactor (0 = not set) grow the retry's memory
	// limit and timeout, capped at MaxMemory and MaxTimeout (0 = no cap).
	MemoryFactor  float64
	TimeoutFactor float64
	MaxMemory     int64
	MaxTimeout    time.Duration
	Index         int // position in the handler, for budgets and messages
	Pos           Pos
}

// Capacity is what a run may reserve at once: CPUs, memory (bytes) and
// GPU devices; a zero field is not set (no limit once resolved).
type Capacity struct {
	CPUs   int
	Memory int64
	GPUs   int
}
