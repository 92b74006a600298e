package model

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// A Case is one random plan: what the generator drew, from which come the
// plan file, the files its scripts read, faber's flags and the model's Plan.
// Shrinking edits a Case.
type Case struct {
	Seed     uint64
	Phases   []GPhase
	Handlers []GHandler
	Jobs     int // plan's jobs:
	JobsFlag int // --jobs (0: none)
	// CPUs is the plan's resources: {cpus: N} (0: none) and PoolSize the
	// size of its pool pa (pools: {pa: N}; 0: none).
	CPUs     int
	PoolSize int
	Cancel   bool
	FailFast bool
	UsePF    bool
	End      bool
	// Codes[id] are what the attempts of step id do, in attempt order;
	// HCodes[id] the exit codes of its handler runs, by failed attempt.
	Codes  map[string][]Exit
	HCodes map[string][]int
	// Sleep[id] is each attempt's run time, in hundredths of a second.
	Sleep map[string]int
	// ResumeFailed and Sessions are the user's policy (Policy).
	ResumeFailed bool
	Sessions     int
	// Kill, when > 0, kills faber (SIGKILL) once it has printed that many
	// events in the first session; the run is then resumed. The outcome
	// is not the model's to say (the kill lands anywhere): only the
	// invariants are checked.
	Kill int
	// Rerun: once the run is over, run the plan again (one session): the
	// steps with inputs that succeeded are cached.
	Rerun bool
	// RerunKill, when > 0 (a Rerun case), kills faber (SIGKILL) once the
	// second run has printed that many events; it is then resumed, so
	// that the resume reads back the records of the cache hits before
	// the kill (README "Storage and durability"). Like Kill, only the
	// invariants are checked. It is drawn from the seed, not the random
	// stream of the plan, so that every seed is still the plan it was.
	RerunKill int
	// Grow: before the first resume, add a file to every Glob's directory.
	Grow bool
	// Batch: the plan says executor: <Engine>, so that every attempt is
	// a batch job (sbatch or qsub; the contract test plays the engine):
	// every rule of SPEC §3–§8 holds unchanged, and a killed faber's
	// running jobs are re-attached to by the resume (README "Slurm",
	// "Grid Engine").
	Batch bool
	// Engine is a Batch case's executor: "slurm" or "sge".
	Engine string
	// StopDead: once faber is killed (Kill), `faber stop` the run before
	// it is resumed: stop takes over a run whose faber died and ends what
	// it left running (README, "Stopping a run from elsewhere"); the
	// resume then goes on from there.
	StopDead bool
	// EndUses are the steps whose output v the end step's run references
	// (README "Step outputs"); the end step fails when one is missing.
	EndUses []string
	// Part is the part of the plan that faber run is asked to run (README
	// "Running a part of a plan"); none: the whole plan.
	Part GPart
	// Notify is the plan's notify: (README "Notifications"): commands that
	// fail or hang past their timeout. A notification never changes an
	// outcome, so the model knows nothing of them: the same outcomes must
	// hold with them.
	Notify []GNotify
	// Budget is the plan's budget: (README "Budgets"); zero: none. Spend[id]
	// is what each attempt of step id reports spending (units, by
	// attempt), HSpend[id] what its handler run for failed attempt N does;
	// Cost says the units are quarters of a dollar (cost_usd, max_cost_usd)
	// rather than turns.
	Budget GBudget
	Spend  map[string][]int
	HSpend map[string][]int
	Cost   bool
}

// GBudget is a budget: in a Case: Units (max_turns, or max_cost_usd in
// quarters) and Attempts (max_attempts); zero: no budget.
type GBudget struct {
	Units    int
	Attempts int
}

func (b GBudget) none() bool { return b == GBudget{} }

// model is the budget as the model's, over steps.
func (b GBudget) model(steps []int) *Budget {
	if b.none() {
		return nil
	}
	return &Budget{Units: b.Units, Attempts: b.Attempts, Steps: steps}
}

// yaml is the budget's flow mapping.
func (b GBudget) yaml(cost bool) string {
	var parts []string
	if b.Units > 0 {
		if cost {
			parts = append(parts, fmt.Sprintf("max_cost_usd: %g", float64(b.Units)*0.25))
		} else {
			parts = append(parts, fmt.Sprintf("max_turns: %d", b.Units))
		}
	}
	if b.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("max_attempts: %d", b.Attempts))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// GNotify is one notification of a Case: the kinds it is on, and whether
// it hangs past its (short) timeout rather than exit 1.
type GNotify struct {
	On   []string
	Hang bool
}

// notifyKinds are the kinds a GNotify may be on.
var notifyKinds = []string{"run_finished", "run_failed", "step_failed", "awaiting_decision", "run_interrupted"}

// GPart is a part of a Case's plan: Steps (each with what it needs, the
// STEP arguments of faber run) and From (each with what follows it, its
// --from), both template ids.
type GPart struct {
	Steps []string
	From  []string
}

func (g GPart) none() bool { return len(g.Steps) == 0 && len(g.From) == 0 }

// GPhase is a phase of a Case.
type GPhase struct {
	Name     string
	Parallel bool
	Steps    []GStep
	Budget   GBudget
	// Gate is its approval: (README "Approval gates", "Phases"), of the
	// kinds of GStep.Gate: one gate for its entry steps, decided on the
	// phase.
	Gate string
}

// GStep is a step of a Case.
type GStep struct {
	ID       string
	Needs    []string
	HasNeeds bool
	Handler  string // failure_handler
	On       GOn
	Items    []string // a fan-out over a static list; nil: none
	// Cache: the step has inputs: [in.txt] (README "Caching").
	Cache bool
	// Child: 0 none; 1 a sub-plan whose one step always succeeds; 2 one
	// whose step always fails (so which child attempt runs never matters).
	Child int
	// Glob: a fan-out over glob "g<n>/*", the files that step Up creates
	// (Files of them, x0, x1 ...; every attempt of Up creates them). With
	// the Case's Grow, the user adds g<n>/x9 before the first resume.
	Glob  bool
	Up    string
	Files int
	// Makes are the files this step creates (it is some Glob's Up).
	Makes []string
	// Uses are the upstream plain steps whose output v its run references
	// ({steps.ID.outputs.v}, an argument of s.sh); on a static fan-out,
	// every item's. What each attempt of a step writes to its outputs file
	// is the Out of its Codes.
	Uses []string
	// When is its condition (README "Conditions"), or none.
	When GWhen
	// From, on a fan-out over a static list, makes it one over the output
	// v of upstream plain step From (foreach: {from: ...}): one item,
	// val-<From>, when From published; the fan-out fails when it did not.
	From string
	// UseEnv puts the references of Uses in the step's env: (U1, U2),
	// which s.sh records, instead of its run.
	UseEnv bool
	// CPUs is its cpus: (0: not written) and Pool its pool: pa; a fan-out's
	// items each request them.
	CPUs int
	Pool bool
	// HUses are the upstream plain steps whose output v its on_failure
	// command references (an argument of h.sh, which records it); a
	// missing one means the handler cannot start (remediation_failed).
	HUses []string
	// Gate is its approval: (README "Approval gates"), on a plain step or
	// a fan-out (one gate for all its items): "" none; "wait"
	// (approval: true: the user decides between sessions, Case.Approve);
	// "approve" or "reject" ({timeout: 1ms, on_timeout: ...}: the timeout
	// decides at once).
	Gate string
	// Budget is its budget: (a fan-out's: each item's); zero: none.
	Budget GBudget
	// MaxPar is a fan-out's max_parallel: (0: not written).
	MaxPar int
}

// fromItem is the item step of a From fan-out.
func (s *GStep) fromItem() string { return s.ID + "[val-" + s.From + "]" }

// GWhen is a step's when: in a Case. Kind: "" none; "ctx" (context.flag
// == Value: true when Value is "on"); "item" (item != Value, on a static
// fan-out: that item is skipped); "status" (steps.Step.status == Value);
// "output" (steps.Step.outputs.v == "val-Step": true when Step published
// v, an evaluation error when it did not).
type GWhen struct {
	Kind  string
	Step  string
	Value string
}

// expr is the condition as the plan writes it.
func (w GWhen) expr() string {
	switch w.Kind {
	case "ctx":
		return fmt.Sprintf("context.flag == %q", w.Value)
	case "item":
		return fmt.Sprintf("item != %q", w.Value)
	case "status":
		return fmt.Sprintf("steps.%s.status == %q", w.Step, w.Value)
	case "output":
		return fmt.Sprintf("steps.%s.outputs.v == %q", w.Step, "val-"+w.Step)
	}
	return ""
}

// GOn is a step's result_handling.
type GOn struct {
	Kind           string // "", stop, continue, retry, command, structured, bogus
	MaxRetries     int    // -1: not written (default 1)
	RetryOnSuccess int    // -1: not written (default true), 0 false, 1 true
}

// GHandler is a failure handler with its rules.
type GHandler struct {
	Name  string
	Rules []GRule
}

// GRule is an exit-code rule.
type GRule struct {
	Codes      []int
	MatchAll   bool
	MaxRetries int // -1: not written (default 3)
	Recovery   bool
	RecExit    int
	OnBudget   bool // on: [budget]
}

// Gen draws a Case from seed.
func Gen(seed uint64) *Case {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Case{Seed: seed, Codes: map[string][]Exit{}, HCodes: map[string][]int{}, Sleep: map[string]int{}}
	pick := func(n int) int { return rng.IntN(n) }
	chance := func(p float64) bool { return rng.Float64() < p }

	for h := 0; h < pick(3); h++ {
		gh := GHandler{Name: fmt.Sprintf("h%d", h)}
		for r := 0; r < 1+pick(2); r++ {
			gr := GRule{MaxRetries: -1 + pick(4), Recovery: chance(0.6), RecExit: pick(2)}
			if chance(0.4) {
				gr.MatchAll = true
			} else {
				gr.Codes = []int{1 + pick(3)}
				if chance(0.3) {
					gr.Codes = append(gr.Codes, 1+pick(3))
				}
			}
			gh.Rules = append(gh.Rules, gr)
		}
		c.Handlers = append(c.Handlers, gh)
	}
	c.Jobs = 1 + pick(4)
	if chance(0.3) {
		c.JobsFlag = 1 + pick(3)
	}
	c.Cancel = chance(0.3)
	c.FailFast = chance(0.2)
	c.UsePF = chance(0.35)
	c.End = chance(0.4)
	c.ResumeFailed = chance(0.4)
	c.Sessions = 1 + pick(3)
	if chance(0.15) {
		c.Kill = 1 + pick(12)
	}
	c.Rerun = chance(0.25)
	c.Grow = chance(0.5)

	var ids []string
	n := 0
	for p := 0; p < 1+pick(3); p++ {
		ph := GPhase{Name: fmt.Sprintf("p%d", p), Parallel: chance(0.6)}
		for s := 0; s < 1+pick(3) && n < 7; s++ {
			gs := GStep{ID: fmt.Sprintf("s%d", n)}
			n++
			if len(ids) > 0 && chance(0.25) {
				gs.HasNeeds = true
				for _, id := range ids {
					if chance(0.4) {
						gs.Needs = append(gs.Needs, id)
					}
				}
			}
			if len(c.Handlers) > 0 && chance(0.5) {
				gs.Handler = c.Handlers[pick(len(c.Handlers))].Name
			}
			kinds := []string{"", "", "stop", "continue", "retry", "command", "command", "structured", "bogus"}
			gs.On = GOn{Kind: kinds[pick(len(kinds))], MaxRetries: -1 + pick(4), RetryOnSuccess: -1 + pick(3)}
			plain := c.plainSteps()
			switch v := pick(20); {
			case v < 3 && len(plain) > 0:
				// A fan-out over files an upstream step creates.
				gs.Glob, gs.Files = true, pick(3)
				gs.Up = plain[pick(len(plain))]
				gs.HasNeeds, gs.Needs = true, []string{gs.Up}
				c.step(gs.Up).Makes = append(c.step(gs.Up).Makes, gs.globFiles()...)
			case v < 6:
				for i := 0; i < 1+pick(3); i++ {
					gs.Items = append(gs.Items, fmt.Sprintf("i%d", i))
				}
			case v < 5:
				gs.Child = 1 + pick(2)
			}
			gs.Cache = gs.Child == 0 && !gs.Glob && chance(0.3)
			for _, id := range gs.concrete() {
				c.Codes[id] = genExits(rng)
				if gs.Child == 1 {
					c.Codes[id] = []Exit{{}}
				} else if gs.Child == 2 {
					c.Codes[id] = nil
					for i := 0; i < 16; i++ {
						c.Codes[id] = append(c.Codes[id], Exit{Code: 1})
					}
				}
				for i := 0; i < 4; i++ {
					c.HCodes[id] = append(c.HCodes[id], []int{0, 0, 1}[pick(3)])
				}
				c.Sleep[id] = pick(6)
			}
			ids = append(ids, gs.ID)
			ph.Steps = append(ph.Steps, gs)
		}
		if len(ph.Steps) > 0 {
			c.Phases = append(c.Phases, ph)
		}
	}
	if c.End {
		c.Codes["end"] = []Exit{{Code: []int{0, 0, 1}[pick(3)]}}
	}
	// Drawn from a stream of its own, so that adding it changed no other
	// draw: every seed is the plan it was, now and then on Slurm.
	c.Batch = rand.New(rand.NewPCG(seed^0xba7c4, seed)).Float64() < 0.3
	// The engine likewise: a Batch seed is the plan it was, on one
	// engine or the other.
	if c.Batch {
		c.Engine = []string{"slurm", "sge"}[rand.New(rand.NewPCG(seed^0x56e, seed)).IntN(2)]
	}
	// And whether a killed case is stopped before its resume.
	if c.Kill > 0 {
		c.StopDead = rand.New(rand.NewPCG(seed^0x5d0b, seed)).IntN(2) == 0
	}
	// And whether the second run of a Rerun case is killed and resumed.
	if r := rand.New(rand.NewPCG(seed^0x4e4b, seed)); c.Rerun && r.IntN(3) == 0 {
		c.RerunKill = 2 + r.IntN(16)
	}
	// And step outputs: who uses whose, and what each attempt writes.
	c.genOutputs(rand.New(rand.NewPCG(seed^0x0b75, seed)))
	// And conditions, likewise.
	c.genWhen(rand.New(rand.NewPCG(seed^0x3e11, seed)))
	// And fan-outs over a published value.
	c.genFrom(rand.New(rand.NewPCG(seed^0xf70e, seed)))
	// And a part of the plan to run, likewise.
	c.genPart(rand.New(rand.NewPCG(seed^0x9a27, seed)))
	// And where outputs are used: a step's env, its failure handler.
	c.genSites(rand.New(rand.NewPCG(seed^0x5e17, seed)))
	// And the run's capacity, the steps' requests and a pool.
	c.genResources(rand.New(rand.NewPCG(seed^0x7c90, seed)))
	// And notifications that fail or hang, drawn last.
	c.genNotify(rand.New(rand.NewPCG(seed^0x0717, seed)))
	// And approval gates.
	c.genGates(rand.New(rand.NewPCG(seed^0x6a7e, seed)))
	// And budgets, with what processes report spending.
	c.genBudgets(rand.New(rand.NewPCG(seed^0xb0d9, seed)))
	// And max_parallel on fan-outs (on a batch engine, the engine's
	// throttle of their arrays).
	c.genMaxPar(rand.New(rand.NewPCG(seed^0x3a9a, seed)))
	// And approval gates on fan-outs, drawn last.
	c.genFanGates(rand.New(rand.NewPCG(seed^0x9a7e, seed)))
	// And approval gates on phases, drawn after them.
	c.genPhaseGates(rand.New(rand.NewPCG(seed^0x9a7f, seed)))
	return c
}

// genPhaseGates puts an approval gate, of the kinds genGates draws, on
// about one phase in seven (a plan in four has one).
func (c *Case) genPhaseGates(rng *rand.Rand) {
	for pi := range c.Phases {
		if rng.Float64() < 0.15 {
			c.Phases[pi].Gate = []string{"wait", "approve", "reject"}[rng.IntN(3)]
		}
	}
}

// PhaseOf is the phase step stepID (an item: its fan-out) is in.
func (c *Case) PhaseOf(stepID string) string {
	id := c.GateOf(stepID)
	for _, ph := range c.Phases {
		for _, s := range ph.Steps {
			if s.ID == id {
				return ph.Name
			}
		}
	}
	return ""
}

// genFanGates puts an approval gate on about a quarter of the fan-outs,
// of the kinds genGates draws: one gate for all the items (README
// "Approval gates", "Fan-outs").
func (c *Case) genFanGates(rng *rand.Rand) {
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if (s.Items != nil || s.Glob) && rng.Float64() < 0.25 {
				s.Gate = []string{"wait", "approve", "reject"}[rng.IntN(3)]
			}
		}
	}
}

// genMaxPar gives about two fan-outs in five max_parallel 1 or 2.
func (c *Case) genMaxPar(rng *rand.Rand) {
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if (s.Items != nil || s.Glob) && rng.Float64() < 0.4 {
				s.MaxPar = 1 + rng.IntN(2)
			}
		}
	}
}

// genBudgets gives about a third of the plans budgets (README "Budgets"):
// every process of theirs reports spending 0–2 units (an attempt, or a
// handler run: more often 1), in turns or quarters of a dollar; the plan
// (half of them), each phase (a quarter) and each step but sub-plan steps
// (half)
// get a small budget of units, attempts or both; a rule in four is on:
// [budget].
func (c *Case) genBudgets(rng *rand.Rand) {
	if rng.Float64() >= 0.35 {
		return
	}
	c.Cost = rng.IntN(2) == 0
	c.Spend, c.HSpend = map[string][]int{}, map[string][]int{}
	draw := func(units, attempts int) GBudget {
		switch rng.IntN(3) {
		case 0:
			return GBudget{Units: 1 + rng.IntN(units)}
		case 1:
			return GBudget{Attempts: 1 + rng.IntN(attempts)}
		}
		return GBudget{Units: 1 + rng.IntN(units), Attempts: 1 + rng.IntN(attempts)}
	}
	for pi := range c.Phases {
		ph := &c.Phases[pi]
		for si := range ph.Steps {
			s := &ph.Steps[si]
			if s.Child > 0 {
				continue
			}
			for _, id := range s.concrete() {
				for k := 0; k < 4; k++ {
					c.Spend[id] = append(c.Spend[id], rng.IntN(3))
					c.HSpend[id] = append(c.HSpend[id], []int{0, 1, 1, 2}[rng.IntN(4)])
				}
			}
			if rng.Float64() < 0.5 {
				s.Budget = draw(4, 3)
			}
		}
		if rng.Float64() < 0.25 {
			ph.Budget = draw(6, 5)
		}
	}
	if rng.Float64() < 0.5 {
		c.Budget = draw(8, 7)
	}
	for hi := range c.Handlers {
		for ri := range c.Handlers[hi].Rules {
			c.Handlers[hi].Rules[ri].OnBudget = rng.IntN(4) == 0
		}
	}
}

// dropBudgets takes every budget out of c, and what its processes report.
func (c *Case) dropBudgets() {
	c.Budget, c.Spend, c.HSpend, c.Cost = GBudget{}, nil, nil, false
	for pi := range c.Phases {
		c.Phases[pi].Budget = GBudget{}
		for si := range c.Phases[pi].Steps {
			c.Phases[pi].Steps[si].Budget = GBudget{}
		}
	}
	for hi := range c.Handlers {
		for ri := range c.Handlers[hi].Rules {
			c.Handlers[hi].Rules[ri].OnBudget = false
		}
	}
}

// spendFiles are the files s.sh and h.sh read what they report from.
func (c *Case) spendFiles(files map[string]string) {
	if c.Spend == nil {
		return
	}
	unit := "turns"
	if c.Cost {
		unit = "cost"
	}
	files["spend/unit"] = unit + "\n"
	for name, m := range map[string]map[string][]int{"spend/": c.Spend, "hspend/": c.HSpend} {
		for id, xs := range m {
			var b strings.Builder
			for _, x := range xs {
				fmt.Fprintf(&b, "%d\n", x)
			}
			files[name+id] = b.String()
		}
	}
}

// genNotify gives about half of the plans one or two notifications, each
// on one to three kinds: one that exits 1, one that hangs past a timeout
// of 100ms, or both.
func (c *Case) genNotify(rng *rand.Rand) {
	if rng.Float64() < 0.5 {
		return
	}
	hangs := [][]bool{{false}, {true}, {false, true}}[rng.IntN(3)]
	for _, hang := range hangs {
		n := GNotify{Hang: hang}
		for _, i := range rng.Perm(len(notifyKinds))[:1+rng.IntN(3)] {
			n.On = append(n.On, notifyKinds[i])
		}
		c.Notify = append(c.Notify, n)
	}
}

// genGates puts an approval gate on about a quarter of the plain steps:
// one the user decides between sessions, or one whose 1ms timeout approves
// or rejects.
func (c *Case) genGates(rng *rand.Rand) {
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if !s.plain() || rng.Float64() >= 0.25 {
				continue
			}
			s.Gate = []string{"wait", "approve", "reject"}[rng.IntN(3)]
		}
	}
}

// Approve is the user's decision on a step waiting at its gate after a
// session (faber approve, else faber reject), drawn from the seed; for a
// fan-out's gate, stepID is the fan-out's (GateOf).
func (c *Case) Approve(stepID string, session int) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/gate/%s/%d", c.Seed, stepID, session)
	return h.Sum64()%3 != 0
}

// GateOf is the id whose gate step stepID waits at: its fan-out's for an
// item (one gate for all the items, decided once), else its own.
func (c *Case) GateOf(stepID string) string {
	if i := strings.IndexByte(stepID, '['); i > 0 {
		return stepID[:i]
	}
	return stepID
}

// genResources gives about a third of the plans a CPU capacity of 1–3
// (resources: {cpus: N}) with steps that request 0 to N CPUs, and about a
// third a pool pa of 1 or 2 that about a third of the steps hold (README
// "Capacity and requests"). Sub-plan steps request nothing.
func (c *Case) genResources(rng *rand.Rand) {
	if rng.Float64() < 0.35 {
		c.CPUs = 1 + rng.IntN(3)
	}
	if rng.Float64() < 0.3 {
		c.PoolSize = 1 + rng.IntN(2)
	}
	if c.CPUs == 0 && c.PoolSize == 0 {
		return
	}
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if s.Child != 0 {
				continue
			}
			if c.CPUs > 0 && rng.Float64() < 0.7 {
				s.CPUs = rng.IntN(c.CPUs + 1)
			}
			if c.PoolSize > 0 && rng.Float64() < 0.35 {
				s.Pool = true
			}
		}
	}
}

// genSites moves about a third of the steps' output references from their
// run to their env:, and gives about a third of the steps with an
// on_failure command (or structured handler) and an upstream plain step a
// reference to one's output v in that handler.
func (c *Case) genSites(rng *rand.Rand) {
	up := c.upstream()
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if len(s.Uses) > 0 && rng.Float64() < 0.35 {
				s.UseEnv = true
			}
			if !s.handlesUses() {
				continue
			}
			cands := c.plainUpstream(up, s.ID)
			if len(cands) == 0 || rng.Float64() >= 0.35 {
				continue
			}
			s.HUses = []string{cands[rng.IntN(len(cands))]}
		}
	}
	c.fixPart() // a part runs the steps a handler reads, as those its steps read
}

// dropResources leaves the plan without a capacity, pools or requests.
func (c *Case) dropResources() {
	c.CPUs, c.PoolSize = 0, 0
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			c.Phases[pi].Steps[si].CPUs, c.Phases[pi].Steps[si].Pool = 0, false
		}
	}
}

// localCPUs is what the step requests of the run's CPUs: nothing for a
// batch job, whose cpus: its engine gives it (README "Capacity and
// requests"); its pools still count.
func (c *Case) localCPUs(s GStep) int {
	if c.Batch {
		return 0
	}
	return s.CPUs
}

// pools is the step's pools as the model's indexes.
func (s *GStep) pools() []int {
	if s.Pool {
		return []int{0}
	}
	return nil
}

// handlesUses: the step's on_failure runs a command, whose arguments may
// use outputs.
func (s *GStep) handlesUses() bool {
	return s.consumer() && (s.On.Kind == "command" || s.On.Kind == "structured")
}

// genFrom turns about a third of the fan-outs over a static list that have
// an upstream plain step into fan-outs over its output v (foreach: {from:
// ...}): one item, val-<step>, which has the codes the list's first item
// had; the step then mostly publishes.
func (c *Case) genFrom(rng *rand.Rand) {
	up := c.upstream()
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if s.Items == nil || s.Glob || s.Child != 0 || rng.Float64() >= 0.35 {
				continue
			}
			cands := c.plainUpstream(up, s.ID)
			if len(cands) == 0 {
				continue
			}
			s.From = cands[rng.IntN(len(cands))]
			first := s.ID + "[" + s.Items[0] + "]"
			c.Codes[s.fromItem()] = append([]Exit(nil), c.Codes[first]...)
			c.HCodes[s.fromItem()] = append([]int(nil), c.HCodes[first]...)
			c.Sleep[s.fromItem()] = c.Sleep[first]
			for i := range c.Codes[s.From] {
				if rng.Float64() < 0.7 {
					c.Codes[s.From][i].Out = OutPublish
				}
			}
		}
	}
}

// genPart draws, for about one seed in ten, a part of the plan to run:
// one or two steps named, or --from one or two, now and then both; then
// adds to the steps named what the part's outputs and conditions need
// (fixPart), as a user told so would.
func (c *Case) genPart(rng *rand.Rand) {
	if rng.Float64() >= 0.1 {
		return
	}
	var ids []string
	for _, t := range c.templates() {
		ids = append(ids, t.s.ID)
	}
	if len(ids) == 0 {
		return
	}
	draw := func() []string {
		out := []string{ids[rng.IntN(len(ids))]}
		if len(ids) > 1 && rng.Float64() < 0.3 {
			if x := ids[rng.IntN(len(ids))]; x != out[0] {
				out = append(out, x)
			}
		}
		return out
	}
	switch v := rng.IntN(10); {
	case v < 5:
		c.Part.Steps = draw()
	case v < 9:
		c.Part.From = draw()
	default:
		c.Part.Steps, c.Part.From = draw(), draw()
	}
	c.fixPart()
}

// partSet is the template ids of the part (nil: the whole plan): each
// step named with every step upstream of it, and each --from step with
// every step downstream of it.
func (c *Case) partSet() map[string]bool {
	if c.Part.none() {
		return nil
	}
	up := c.upstream()
	in := map[string]bool{}
	for _, id := range c.Part.Steps {
		in[id] = true
		for x := range up[id] {
			in[x] = true
		}
	}
	for _, f := range c.Part.From {
		for id, set := range up {
			if id == f || set[f] {
				in[id] = true
			}
		}
	}
	return in
}

// partDeps are a template's deps in the part (those on steps left out
// dropped).
func partDeps(deps []string, in map[string]bool) []string {
	if in == nil {
		return deps
	}
	var out []string
	for _, d := range deps {
		if in[d] {
			out = append(out, d)
		}
	}
	return out
}

// fixPart makes the part one faber runs: steps it names that the plan no
// longer has go (no part left: the whole plan), and every step whose output
// or status a step of the part (or the end step) reads is in it and
// upstream of its reader there, by naming the step left out, or the reader
// cut off from it (what faber's message says to do).
func (c *Case) fixPart() {
	have := map[string]bool{}
	for _, t := range c.templates() {
		have[t.s.ID] = true
	}
	keep := func(ids []string) []string {
		var out []string
		for _, id := range ids {
			if have[id] && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	c.Part.Steps, c.Part.From = keep(c.Part.Steps), keep(c.Part.From)
	for changed := true; changed && !c.Part.none(); {
		changed = false
		in := c.partSet()
		// Upstream within the part.
		up := map[string]map[string]bool{}
		for _, t := range c.templates() {
			if !in[t.s.ID] {
				continue
			}
			set := map[string]bool{}
			for _, d := range partDeps(t.deps, in) {
				set[d] = true
				for x := range up[d] {
					set[x] = true
				}
			}
			up[t.s.ID] = set
		}
		name := func(id string) {
			if !slices.Contains(c.Part.Steps, id) {
				c.Part.Steps = append(c.Part.Steps, id)
				changed = true
			}
		}
		for _, t := range c.templates() {
			s := t.s
			if !in[s.ID] {
				continue
			}
			reads := append(append([]string(nil), s.Uses...), s.HUses...)
			if s.When.Kind == "status" || s.When.Kind == "output" {
				reads = append(reads, s.When.Step)
			}
			for _, r := range reads {
				switch {
				case !in[r]:
					name(r)
				case !up[s.ID][r]:
					name(s.ID)
				}
			}
		}
		if c.End {
			for _, r := range c.EndUses {
				if !in[r] {
					name(r)
				}
			}
		}
	}
}

// PartArgs are faber run's arguments that name the part: the steps, then
// --from with its steps.
func (c *Case) PartArgs() []string {
	args := append([]string(nil), c.Part.Steps...)
	if len(c.Part.From) > 0 {
		args = append(args, "--from", strings.Join(c.Part.From, ","))
	}
	return args
}

// concreteIn is the step ids s becomes in the part: a glob fan-out whose
// Up step is left out finds none of its files (only the one the user
// adds).
func (c *Case) concreteIn(s GStep, in map[string]bool) []string {
	ids := s.concrete()
	if s.Glob && in != nil && !in[s.Up] {
		ids = []string{s.ID + "[" + strings.ReplaceAll("g"+s.ID+"/x9", "/", "_") + "]", s.ID}
	}
	return ids
}

// genWhen draws the conditions: on about a quarter of the plain steps,
// static fan-outs and sub-plan steps, one that reads the context (true or
// false), the item (one item skipped), an upstream step's status, or an
// output of an upstream plain step (an evaluation error when it was not
// published).
func (c *Case) genWhen(rng *rand.Rand) {
	up := c.upstream()
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if s.Glob || rng.Float64() >= 0.25 {
				continue
			}
			var ups []string
			for _, t := range c.templates() {
				if up[s.ID][t.s.ID] {
					ups = append(ups, t.s.ID)
				}
			}
			plainUps := c.plainUpstream(up, s.ID)
			switch v := rng.IntN(10); {
			case v < 2:
				s.When = GWhen{Kind: "ctx", Value: []string{"on", "off"}[rng.IntN(2)]}
			case v < 4 && s.Items != nil:
				s.When = GWhen{Kind: "item", Value: s.Items[rng.IntN(len(s.Items))]}
			case v < 7 && len(ups) > 0:
				s.When = GWhen{Kind: "status", Step: ups[rng.IntN(len(ups))], Value: []string{"success", "failure", "skipped", "cached"}[rng.IntN(4)]}
			case len(plainUps) > 0:
				s.When = GWhen{Kind: "output", Step: plainUps[rng.IntN(len(plainUps))]}
			default:
				s.When = GWhen{Kind: "ctx", Value: "on"}
			}
		}
	}
}

// whenOK: the step's condition still names an upstream step of the right
// kind (after a shrink).
func (c *Case) whenOK(s *GStep, up map[string]map[string]bool, plain map[string]bool) bool {
	switch s.When.Kind {
	case "status":
		return up[s.ID][s.When.Step]
	case "output":
		return up[s.ID][s.When.Step] && plain[s.When.Step]
	case "item":
		return slices.Contains(s.Items, s.When.Value) && !s.Glob
	}
	return true
}

// genOutputs draws the Uses of the steps that may reference an output
// (plain steps, static fan-outs, the end step), each of an upstream plain
// step, and then the Out of every attempt of every plain step: mostly a
// publish for a step something uses, sometimes nothing or a malformed file;
// now and then one for the others too. A failed attempt's Out is drawn as
// well (faber ignores it).
func (c *Case) genOutputs(rng *rand.Rand) {
	up := c.upstream()
	used := map[string]bool{}
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			if !s.consumer() {
				continue
			}
			cands := c.plainUpstream(up, s.ID)
			if len(cands) == 0 || rng.Float64() >= 0.4 {
				continue
			}
			k := rng.IntN(len(cands))
			s.Uses = []string{cands[k]}
			if len(cands) > 1 && rng.Float64() < 0.25 {
				cands = append(cands[:k:k], cands[k+1:]...)
				s.Uses = append(s.Uses, cands[rng.IntN(len(cands))])
			}
			for _, u := range s.Uses {
				used[u] = true
			}
		}
	}
	if plain := c.plainSteps(); c.End && len(plain) > 0 && rng.Float64() < 0.35 {
		c.EndUses = []string{plain[rng.IntN(len(plain))]}
		used[c.EndUses[0]] = true
	}
	for _, id := range c.plainSteps() {
		xs := c.Codes[id]
		for i := range xs {
			v := rng.Float64()
			switch {
			case used[id] && v < 0.8, !used[id] && v < 0.1:
				xs[i].Out = OutPublish
			case used[id] && v < 0.9, !used[id] && v < 0.15:
				xs[i].Out = OutMalformed
			}
		}
		if n := len(xs); used[id] && n > 0 && xs[n-1].Failed() && rng.Float64() < 0.8 {
			// The attempt after the last one drawn exits 0 (as every
			// attempt past the end does); mostly it publishes, too.
			c.Codes[id] = append(xs, Exit{Out: OutPublish})
		}
	}
}

// consumer: the step may reference outputs (a plain step or a fan-out over
// a static list).
func (s *GStep) consumer() bool { return s.plain() || (s.Items != nil && !s.Glob && s.Child == 0) }

// plain: the step runs s.sh itself (no fan-out, no sub-plan): it may create
// a Glob's files and publish outputs.
func (s *GStep) plain() bool { return s.Items == nil && !s.Glob && s.Child == 0 }

// upstream is, for each step, the steps upstream of it (by the deps of
// SPEC §2, transitively), as faber's validate sees them.
func (c *Case) upstream() map[string]map[string]bool {
	up := map[string]map[string]bool{}
	for _, t := range c.templates() {
		set := map[string]bool{}
		for _, d := range t.deps {
			set[d] = true
			for x := range up[d] {
				set[x] = true
			}
		}
		up[t.s.ID] = set
	}
	return up
}

// pruneUses drops the Uses that no longer name an upstream plain step (a
// shrink removed the step or a need on the way to it), and those of a step
// that may no longer use outputs.
func (c *Case) pruneUses() {
	up := c.upstream()
	plain := c.plainSet()
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			s := &c.Phases[pi].Steps[si]
			var keep []string
			for _, u := range s.Uses {
				if s.consumer() && plain[u] && up[s.ID][u] {
					keep = append(keep, u)
				}
			}
			s.Uses = keep
			if len(keep) == 0 {
				s.UseEnv = false
			}
			var hkeep []string
			for _, u := range s.HUses {
				if s.handlesUses() && plain[u] && up[s.ID][u] {
					hkeep = append(hkeep, u)
				}
			}
			s.HUses = hkeep
			if !c.whenOK(s, up, plain) {
				s.When = GWhen{}
			}
			if s.From != "" && !(plain[s.From] && up[s.ID][s.From]) {
				s.From = ""
			}
		}
	}
	var keep []string
	for _, u := range c.EndUses {
		if c.End && plain[u] {
			keep = append(keep, u)
		}
	}
	c.EndUses = keep
	c.fixPart()
}

// runRefs is what the step's run adds to reference the outputs it uses:
// nothing when they are in its env:.
func (s *GStep) runRefs() string {
	if s.UseEnv {
		return ""
	}
	return refs(s.Uses)
}

// refs is the run's arguments that reference the outputs ids use.
func refs(ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, " {steps.%s.outputs.v}", id)
	}
	return b.String()
}

func genExits(rng *rand.Rand) []Exit {
	var xs []Exit
	for i := 0; i < 1+rng.IntN(4); i++ {
		switch v := rng.IntN(20); {
		case v < 8:
			xs = append(xs, Exit{})
		case v < 12:
			xs = append(xs, Exit{Code: 1})
		case v < 15:
			xs = append(xs, Exit{Code: 2})
		case v < 17:
			xs = append(xs, Exit{Code: 3})
		default:
			xs = append(xs, Exit{Result: true})
		}
	}
	return xs
}

// concrete is the step ids the step becomes: its items and then itself.
func (s *GStep) concrete() []string {
	var out []string
	if s.From != "" {
		return []string{s.fromItem(), s.ID}
	}
	for _, it := range s.Items {
		out = append(out, s.ID+"["+it+"]")
	}
	for _, f := range s.globItems() {
		out = append(out, s.ID+"["+strings.ReplaceAll(f, "/", "_")+"]")
	}
	return append(out, s.ID)
}

// globItems are every file a Glob step may read: the Up step's, and the
// one the user adds (in glob order).
func (s *GStep) globItems() []string {
	if !s.Glob {
		return nil
	}
	return append(s.globFiles(), "g"+s.ID+"/x9")
}

// globFiles are the files the Up step creates.
func (s *GStep) globFiles() []string {
	var out []string
	for i := 0; i < s.Files; i++ {
		out = append(out, fmt.Sprintf("g%s/x%d", s.ID, i))
	}
	return out
}

// plainUpstream are the plain steps upstream of step id (up is
// c.upstream()), in plan order: those whose output it may use.
func (c *Case) plainUpstream(up map[string]map[string]bool, id string) []string {
	var out []string
	for _, p := range c.plainSteps() {
		if up[id][p] {
			out = append(out, p)
		}
	}
	return out
}

// plainSet is plainSteps as a set.
func (c *Case) plainSet() map[string]bool {
	set := map[string]bool{}
	for _, id := range c.plainSteps() {
		set[id] = true
	}
	return set
}

// plainSteps are the ids of the steps so far that run s.sh themselves (no
// fan-out, no sub-plan): those can create a Glob's files and publish
// outputs.
func (c *Case) plainSteps() []string {
	var out []string
	for _, ph := range c.Phases {
		for _, s := range ph.Steps {
			if s.plain() {
				out = append(out, s.ID)
			}
		}
	}
	return out
}

func (c *Case) step(id string) *GStep {
	for pi := range c.Phases {
		for si := range c.Phases[pi].Steps {
			if c.Phases[pi].Steps[si].ID == id {
				return &c.Phases[pi].Steps[si]
			}
		}
	}
	return nil
}

// GrowFiles are the files the user adds before the first resume.
func (c *Case) GrowFiles() []string {
	if !c.Grow {
		return nil
	}
	var out []string
	for _, ph := range c.Phases {
		for _, s := range ph.Steps {
			if s.Glob {
				out = append(out, "g"+s.ID+"/x9")
			}
		}
	}
	return out
}

// ClassifyRetry is the user's classification of a pending_failed step in a
// session: --retry or --fail, drawn from the seed.
func (c *Case) ClassifyRetry(stepID string, session int) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", c.Seed, stepID, session)
	return h.Sum64()%2 == 0
}

// Args are faber run's flags.
func (c *Case) Args() []string {
	args := []string{"run", "plan.yaml", "--ui", "json"}
	if c.JobsFlag > 0 {
		args = append(args, "--jobs", fmt.Sprint(c.JobsFlag))
	}
	if c.FailFast {
		args = append(args, "--fail-fast")
	}
	return append(args, c.PartArgs()...)
}

// Files are the plan and the files its scripts read, by name.
func (c *Case) Files() map[string]string {
	files := map[string]string{"plan.yaml": c.YAML()}
	files["s.sh"] = stepScript
	files["h.sh"] = handlerScript
	files["r.sh"] = recoveryScript
	files["spend.sh"] = spendScript
	files["in.txt"] = "the input of every step with inputs:\n"
	for _, ph := range c.Phases {
		for _, s := range ph.Steps {
			if s.Child > 0 {
				files["child-"+s.ID+".yaml"] = fmt.Sprintf("name: child-%s\nsteps:\n  - id: c\n    run: exit %d\n", s.ID, s.Child-1)
			}
		}
	}
	for id, xs := range c.Codes {
		var b strings.Builder
		for _, x := range xs {
			if x.Result {
				b.WriteString("r")
			} else {
				fmt.Fprintf(&b, "%d", x.Code)
			}
			b.WriteString([...]string{"", "p", "b"}[x.Out] + "\n")
		}
		files["codes/"+id] = b.String()
	}
	for id, hs := range c.HCodes {
		var b strings.Builder
		for _, h := range hs {
			fmt.Fprintf(&b, "%d\n", h)
		}
		files["hcodes/"+id] = b.String()
	}
	c.spendFiles(files)
	return files
}

// The scripts read what to do from codes/<step id> (line N: attempt N) and
// hcodes/<step id> (line N: the handler for failed attempt N), so what a
// process does depends only on which one it is, never on timing; each
// appends a line to trace.log. A code line is an exit code or r (a result
// file that says failure), then p to publish v=val-<step id> to
// $FABER_OUTPUTS, or b to write a line there without '='. s.sh's arguments
// after the sleep are files to create (g...), an item (i...), or the value
// of an output it uses, which it records in trace.log ("uses" lines), as
// it does the values in its U1 and U2 (env:). h.sh records the values its
// arguments carry ("huses" lines).
const stepScript = `#!/bin/sh
sleep "$1"
shift
for f in "$@"; do
  case $f in
  g*) mkdir -p "${f%/*}" && : > "$f";;
  i[0-9]*|it:*) ;;
  *) echo "uses $FABER_STEP_ID $FABER_ATTEMPT $f" >> trace.log;;
  esac
done
for f in "$U1" "$U2"; do
  [ -z "$f" ] || echo "uses $FABER_STEP_ID $FABER_ATTEMPT $f" >> trace.log
done
c=$(sed -n "${FABER_ATTEMPT}p" "codes/$FABER_STEP_ID" 2>/dev/null)
[ -n "$c" ] || c=0
case $c in
*p) c=${c%p}; echo "v=val-$FABER_STEP_ID" >> "$FABER_OUTPUTS";;
*b) c=${c%b}; echo "a line without an equals sign" >> "$FABER_OUTPUTS";;
esac
echo "attempt $FABER_STEP_ID $FABER_ATTEMPT $c" >> trace.log
sp=$(./spend.sh "spend/$FABER_STEP_ID" "$FABER_ATTEMPT")
if [ "$c" = r ]; then
  printf '{"status":"failure","message":"the result file says failure"%s}' "${sp:+,$sp}" > "$FABER_RESULT"
  exit 0
fi
[ -z "$sp" ] || printf '{%s}' "$sp" > "$FABER_RESULT"
[ "$c" = 0 ] || echo "attempt $FABER_ATTEMPT failed with $c" >&2
exit "$c"
`

// spendScript prints the usage fields a process reports (README
// "Budgets"): line $2 of file $1 is its units, turns or quarters of a
// dollar as spend/unit says; nothing for 0 or no line.
const spendScript = `#!/bin/sh
u=$(sed -n "${2}p" "$1" 2>/dev/null)
case $u in
''|0) exit 0;;
esac
if [ "$(cat spend/unit)" = cost ]; then
  printf '"cost_usd":%s' "0.$((u * 25))"
else
  printf '"turns":%s' "$u"
fi
`

const handlerScript = `#!/bin/sh
for a in "$@"; do
  case $a in
  val-*) echo "huses $FABER_STEP_ID $FABER_FAILED_ATTEMPT $a" >> trace.log;;
  esac
done
c=$(sed -n "${FABER_FAILED_ATTEMPT}p" "hcodes/$FABER_STEP_ID" 2>/dev/null)
[ -n "$c" ] || c=0
echo "handler $FABER_STEP_ID $FABER_FAILED_ATTEMPT $c" >> trace.log
sp=$(./spend.sh "hspend/$FABER_STEP_ID" "$FABER_FAILED_ATTEMPT")
[ -z "$sp" ] || printf '{%s}' "$sp" > "$FABER_RESULT"
exit "$c"
`

const recoveryScript = `#!/bin/sh
echo "recovery $FABER_STEP_ID $FABER_FAILED_ATTEMPT $1" >> trace.log
exit "$1"
`

// BatchEngine is a Batch case's executor, "slurm" or "sge" (a Case made
// without an Engine is on Slurm).
func (c *Case) BatchEngine() string {
	if c.Engine == "" {
		return "slurm"
	}
	return c.Engine
}

// YAML is the plan file.
func (c *Case) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: rand%d\njobs: %d\n", c.Seed%1000, c.Jobs)
	if c.usesContext() {
		b.WriteString("context: {flag: \"on\"}\n")
	}
	if c.Batch {
		fmt.Fprintf(&b, "executor: %s\n", c.BatchEngine())
	}
	if c.CPUs > 0 {
		fmt.Fprintf(&b, "resources: {cpus: %d}\n", c.CPUs)
	}
	if c.PoolSize > 0 {
		fmt.Fprintf(&b, "pools: {pa: %d}\n", c.PoolSize)
	}
	if c.Cancel {
		b.WriteString("stop_mode: cancel\n")
	}
	if c.UsePF {
		b.WriteString("use_pending_failed: true\n")
	}
	if !c.Budget.none() {
		fmt.Fprintf(&b, "budget: %s\n", c.Budget.yaml(c.Cost))
	}
	b.WriteString("commands:\n  /fix: ./h.sh\n")
	if len(c.Handlers) > 0 {
		b.WriteString("failure_handlers:\n")
		for _, h := range c.Handlers {
			fmt.Fprintf(&b, "  - name: %s\n    rules:\n", h.Name)
			for _, r := range h.Rules {
				if r.MatchAll {
					b.WriteString("      - match_all_exit_codes: true\n")
				} else {
					fmt.Fprintf(&b, "      - exit_codes: %s\n", intList(r.Codes))
				}
				if r.MaxRetries >= 0 {
					fmt.Fprintf(&b, "        max_retries: %d\n", r.MaxRetries)
				}
				if r.Recovery {
					fmt.Fprintf(&b, "        recovery_script: ./r.sh %d\n", r.RecExit)
				}
				if r.OnBudget {
					b.WriteString("        on: [budget]\n")
				}
			}
		}
	}
	b.WriteString("phases:\n")
	for _, ph := range c.Phases {
		fmt.Fprintf(&b, "  - name: %s\n    parallel: %v\n", ph.Name, ph.Parallel)
		if !ph.Budget.none() {
			fmt.Fprintf(&b, "    budget: %s\n", ph.Budget.yaml(c.Cost))
		}
		writeGate(&b, "    ", ph.Gate)
		b.WriteString("    steps:\n")
		for _, s := range ph.Steps {
			fmt.Fprintf(&b, "      - id: %s\n", s.ID)
			switch {
			case s.Child > 0:
				fmt.Fprintf(&b, "        plan: child-%s.yaml\n", s.ID)
			case s.From != "":
				fmt.Fprintf(&b, "        foreach: {from: \"{steps.%s.outputs.v}\"}\n", s.From)
				fmt.Fprintf(&b, "        run: ./s.sh 0.0%d it:{item}%s\n", c.Sleep[s.fromItem()], s.runRefs())
			case s.Items != nil:
				fmt.Fprintf(&b, "        foreach: [%s]\n", strings.Join(s.Items, ", "))
				fmt.Fprintf(&b, "        run: ./s.sh 0.0%d {item}%s\n", c.Sleep[s.ID+"["+s.Items[0]+"]"], s.runRefs())
			case s.Glob:
				fmt.Fprintf(&b, "        foreach: {glob: \"g%s/*\"}\n", s.ID)
				fmt.Fprintf(&b, "        run: ./s.sh 0.0%d {item}\n", c.Sleep[s.ID])
			default:
				fmt.Fprintf(&b, "        run: ./s.sh 0.0%d%s%s\n", c.Sleep[s.ID], strings.TrimRight(" "+strings.Join(s.Makes, " "), " "), s.runRefs())
			}
			if s.UseEnv {
				b.WriteString("        env:\n")
				for k, u := range s.Uses {
					fmt.Fprintf(&b, "          U%d: \"{steps.%s.outputs.v}\"\n", k+1, u)
				}
			}
			if s.HasNeeds {
				fmt.Fprintf(&b, "        needs: [%s]\n", strings.Join(s.Needs, ", "))
			}
			if s.Cache {
				b.WriteString("        inputs: [in.txt]\n")
			}
			if s.Handler != "" {
				fmt.Fprintf(&b, "        failure_handler: %s\n", s.Handler)
			}
			if s.CPUs > 0 {
				fmt.Fprintf(&b, "        cpus: %d\n", s.CPUs)
			}
			if s.Pool {
				b.WriteString("        pool: pa\n")
			}
			if w := s.When.expr(); w != "" {
				fmt.Fprintf(&b, "        when: '%s'\n", w)
			}
			if !s.Budget.none() {
				fmt.Fprintf(&b, "        budget: %s\n", s.Budget.yaml(c.Cost))
			}
			if s.MaxPar > 0 {
				fmt.Fprintf(&b, "        max_parallel: %d\n", s.MaxPar)
			}
			writeGate(&b, "        ", s.Gate)
			writeOn(&b, s.On, s.HUses)
		}
	}
	if c.End {
		fmt.Fprintf(&b, "end:\n  run: ./s.sh 0%s\n", refs(c.EndUses))
	}
	if len(c.Notify) > 0 {
		b.WriteString("notify:\n")
		for _, n := range c.Notify {
			fmt.Fprintf(&b, "  - on: [%s]\n", strings.Join(n.On, ", "))
			if n.Hang {
				b.WriteString("    run: exec sleep 30\n    timeout: 100ms\n")
			} else {
				b.WriteString("    run: echo '{event} {step_id} {status}' >&2; exit 1\n")
			}
		}
	}
	return b.String()
}

// writeGate writes approval: of kind gate (GStep.Gate), indented.
func writeGate(b *strings.Builder, indent, gate string) {
	switch gate {
	case "wait":
		b.WriteString(indent + "approval: true\n")
	case "approve", "reject":
		fmt.Fprintf(b, "%sapproval: {timeout: 1ms, on_timeout: %s}\n", indent, gate)
	}
}

func writeOn(b *strings.Builder, on GOn, hUses []string) {
	var lines []string
	switch on.Kind {
	case "":
	case "command":
		lines = append(lines, `on_failure: /fix --problem "{error}" --attempt {attempt}`+refs(hUses))
	case "structured":
		use := ""
		for k, u := range hUses {
			use += fmt.Sprintf(", use%d: \"{steps.%s.outputs.v}\"", k+1, u)
		}
		lines = append(lines, "on_failure:", "  command: /fix", "  args: {problem: \"{error}\""+use+"}")
		if on.RetryOnSuccess >= 0 {
			lines = append(lines, fmt.Sprintf("  retry_on_success: %v", on.RetryOnSuccess == 1))
		}
		if on.MaxRetries >= 0 {
			lines = append(lines, fmt.Sprintf("  max_retries: %d", on.MaxRetries))
		}
	case "bogus":
		lines = append(lines, "on_failure: shrug")
	default:
		lines = append(lines, "on_failure: "+on.Kind)
	}
	if on.MaxRetries >= 0 && (on.Kind == "retry" || on.Kind == "command") {
		lines = append(lines, fmt.Sprintf("max_retries: %d", on.MaxRetries))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("        result_handling:\n")
	for _, l := range lines {
		fmt.Fprintf(b, "          %s\n", l)
	}
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// Model is the Case as the model's Plan: dependencies by SPEC §2, fan-outs
// expanded into items and a join.
func (c *Case) Model() *Plan {
	p := &Plan{Jobs: c.Jobs, Cancel: c.Cancel || c.FailFast, UsePendingFailed: c.UsePF, CPUs: c.CPUs, Arrays: c.Batch}
	if c.PoolSize > 0 {
		p.PoolSizes = []int{c.PoolSize}
	}
	if c.JobsFlag > 0 {
		p.Jobs = c.JobsFlag
	}
	p.Policy = Policy{Sessions: c.Sessions, ResumeFailed: c.ResumeFailed, ClassifyRetry: c.ClassifyRetry, Approve: c.Approve, Rerun: c.Rerun, Grow: c.Grow}
	handlers := map[string][]Rule{}
	for _, h := range c.Handlers {
		for _, r := range h.Rules {
			mr := Rule{Codes: r.Codes, MatchAll: r.MatchAll, MaxRetries: r.MaxRetries, Recovery: r.Recovery, OnBudget: r.OnBudget}
			if mr.MaxRetries < 0 {
				mr.MaxRetries = 3
			}
			handlers[h.Name] = append(handlers[h.Name], mr)
		}
	}
	index := map[string]int{}
	in := c.partSet()
	// The steps of each phase, for its budget.
	phaseOf := map[string]int{}
	for pi, ph := range c.Phases {
		for _, s := range ph.Steps {
			phaseOf[s.ID] = pi
		}
	}
	phaseSteps := make([][]int, len(c.Phases))
	// The phases' gates; a gated phase's entry steps (no needs inside
	// the phase, as written: a part does not change them) pass it.
	pgOf := map[int]int{}
	for pi, ph := range c.Phases {
		if ph.Gate != "" {
			pgOf[pi] = len(p.PhaseGates) + 1
			p.PhaseGates = append(p.PhaseGates, PhaseGate{Name: ph.Name, Kind: gateKinds[ph.Gate]})
		}
	}
	for _, t := range c.templates() {
		s := t.s
		if in != nil && !in[s.ID] {
			continue // left out: done, as far as the part knows
		}
		phase := pgOf[phaseOf[s.ID]]
		for _, d := range t.deps {
			if phaseOf[d] == phaseOf[s.ID] {
				phase = 0 // not an entry step
			}
		}
		t.deps = partDeps(t.deps, in)
		on := toOn(s.On)
		var items []int
		ids := c.concreteIn(s, in)
		join := len(p.Steps) + len(ids) - 1
		for k, id := range ids[:len(ids)-1] {
			index[id] = len(p.Steps)
			items = append(items, len(p.Steps))
			grown := s.Glob && k == len(ids)-2 // g<n>/x9, the file the user adds
			phaseSteps[phaseOf[s.ID]] = append(phaseSteps[phaseOf[s.ID]], len(p.Steps))
			p.Steps = append(p.Steps, Step{ID: id, Deps: c.idx(index, t.deps), Rules: handlers[s.Handler], OnFailure: on,
				Attempts: c.Codes[id], Handler: c.HCodes[id], Cacheable: s.Cache, Group: join, Grown: grown, Uses: c.idx(index, s.Uses), HUses: c.idx(index, s.HUses), Maker: c.maker(s, grown, index),
				CPUs: c.localCPUs(s), Pools: s.pools(),
				When: c.cond(s, id, false, index), Gate: gateKinds[s.Gate], Phase: phase,
				Spend: c.Spend[id], HSpend: c.HSpend[id], Budget: s.Budget.model(nil)})
		}
		index[s.ID] = len(p.Steps)
		st := Step{ID: s.ID, Deps: c.idx(index, t.deps), Rules: handlers[s.Handler], OnFailure: on,
			Attempts: c.Codes[s.ID], Handler: c.HCodes[s.ID], Cacheable: s.Cache, Group: -1}
		if s.plain() {
			st.Uses = c.idx(index, s.Uses)
			st.HUses = c.idx(index, s.HUses)
			st.CPUs, st.Pools = c.localCPUs(s), s.pools()
			st.Gate = gateKinds[s.Gate]
			st.Spend, st.HSpend, st.Budget = c.Spend[s.ID], c.HSpend[s.ID], s.Budget.model(nil)
		}
		phaseSteps[phaseOf[s.ID]] = append(phaseSteps[phaseOf[s.ID]], len(p.Steps))
		st.When = c.cond(s, s.ID, s.Items != nil || s.Glob, index)
		if s.Items == nil && !s.Glob {
			st.Phase = phase // a fan-out's items pass it, not its join
		}
		if s.Items != nil || s.Glob {
			st.Join, st.Items, st.Cacheable, st.Dynamic = true, items, false, s.Glob || s.From != ""
			st.MaxPar = s.MaxPar
			st.Gate = gateKinds[s.Gate] // the fan-out's gate, on its items too
		}
		if s.From != "" {
			st.From = index[s.From] + 1
		}
		p.Steps = append(p.Steps, st)
	}
	if c.End {
		p.End = &Step{ID: "end", Attempts: c.Codes["end"], Group: -1, Uses: c.idx(index, c.EndUses)}
	}
	for pi, ph := range c.Phases {
		if b := ph.Budget.model(phaseSteps[pi]); b != nil {
			p.Budgets = append(p.Budgets, *b)
		}
	}
	if b := c.Budget.model(nil); b != nil {
		for i := range p.Steps {
			b.Steps = append(b.Steps, i)
		}
		p.Budgets = append(p.Budgets, *b)
	}
	return p
}

// gateKinds are a GStep's Gate as the model's.
var gateKinds = map[string]GateKind{"wait": GateWait, "approve": GateApprove, "reject": GateReject}

// tmpl is a step of the plan as written, with its deps by SPEC §2 on
// template ids (a fan-out's id is its join).
type tmpl struct {
	s    GStep
	deps []string
}

// templates are the plan's steps, in plan order, with their deps.
func (c *Case) templates() []tmpl {
	var prevPhase []string
	var all []tmpl
	for _, ph := range c.Phases {
		var ids []string
		for i, s := range ph.Steps {
			var deps []string
			switch {
			case s.HasNeeds:
				deps = s.Needs
			case ph.Parallel || i == 0:
				deps = prevPhase
			default:
				deps = []string{ph.Steps[i-1].ID}
			}
			all = append(all, tmpl{s, deps})
			ids = append(ids, s.ID)
		}
		prevPhase = ids
	}
	return all
}

func (c *Case) idx(index map[string]int, ids []string) []int {
	var out []int
	for _, id := range ids {
		out = append(out, index[id])
	}
	return out
}

func toOn(g GOn) OnFailure {
	on := OnFailure{Explicit: g.Kind != "", MaxRetries: 1, RetryOnSuccess: true}
	if g.MaxRetries >= 0 {
		on.MaxRetries = g.MaxRetries
	}
	switch g.Kind {
	case "continue":
		on.Kind = OnContinue
	case "retry":
		on.Kind = OnRetry
	case "command":
		on.Kind = OnCommand
	case "structured":
		on.Kind = OnCommand
		if g.RetryOnSuccess == 0 {
			on.RetryOnSuccess = false
		}
	default:
		on.Kind = OnStop
	}
	return on
}

// StepIDs are the plan's step ids in plan order (items before their join),
// the end step last.
func (c *Case) StepIDs() []string {
	var ids []string
	in := c.partSet()
	for _, ph := range c.Phases {
		for _, s := range ph.Steps {
			if in == nil || in[s.ID] {
				ids = append(ids, c.concreteIn(s, in)...)
			}
		}
	}
	if c.End {
		ids = append(ids, "end")
	}
	return ids
}

// Shrinks returns smaller variants of c, simplest first, for a failing
// case to be cut down to one that still fails.
func (c *Case) Shrinks() []*Case {
	var out []*Case
	// variant adds c changed by change.
	variant := func(change func(d *Case)) {
		d := c.clone()
		change(d)
		d.pruneUses()
		out = append(out, d)
	}
	// Drop a step (and every needs: of it).
	for pi, ph := range c.Phases {
		for si := range ph.Steps {
			d := c.clone()
			id := d.Phases[pi].Steps[si].ID
			d.Phases[pi].Steps = append(d.Phases[pi].Steps[:si:si], d.Phases[pi].Steps[si+1:]...)
			if len(d.Phases[pi].Steps) == 0 {
				d.Phases = append(d.Phases[:pi:pi], d.Phases[pi+1:]...)
			}
			if len(d.Phases) == 0 {
				continue
			}
			for _, p := range d.Phases {
				for k := range p.Steps {
					p.Steps[k].Needs = without(p.Steps[k].Needs, id)
					if p.Steps[k].Up == id {
						p.Steps[k].Glob, p.Steps[k].Up = false, ""
					}
				}
			}
			d.pruneUses()
			out = append(out, d)
		}
	}
	if !c.Part.none() {
		variant(func(d *Case) { d.Part = GPart{} })
	}
	if c.End {
		variant(func(d *Case) { d.End = false })
	}
	for k := range c.EndUses {
		variant(func(d *Case) { d.EndUses = append(d.EndUses[:k:k], d.EndUses[k+1:]...) })
	}
	if c.Batch {
		// No engine, then the other one: whether the disagreement is the
		// engine's.
		variant(func(d *Case) { d.Batch, d.Engine = false, "" })
		other := "sge"
		if c.BatchEngine() == "sge" {
			other = "slurm"
		}
		variant(func(d *Case) { d.Engine = other })
	}
	if c.Kill > 0 {
		variant(func(d *Case) { d.Kill, d.StopDead = 0, false })
	}
	if c.CPUs > 0 || c.PoolSize > 0 {
		variant(func(d *Case) { d.dropResources() })
	}
	if c.StopDead {
		variant(func(d *Case) { d.StopDead = false })
	}
	for pi, ph := range c.Phases {
		for si, st := range ph.Steps {
			if st.Gate != "" {
				variant(func(d *Case) { d.Phases[pi].Steps[si].Gate = "" })
			}
		}
	}
	if c.Spend != nil {
		// No budgets at all, then one budget fewer.
		variant(func(d *Case) { d.dropBudgets() })
	}
	if !c.Budget.none() {
		variant(func(d *Case) { d.Budget = GBudget{} })
	}
	for pi, ph := range c.Phases {
		if ph.Gate != "" {
			variant(func(d *Case) { d.Phases[pi].Gate = "" })
		}
		if !ph.Budget.none() {
			variant(func(d *Case) { d.Phases[pi].Budget = GBudget{} })
		}
		for si, st := range ph.Steps {
			if !st.Budget.none() {
				variant(func(d *Case) { d.Phases[pi].Steps[si].Budget = GBudget{} })
			}
			if st.MaxPar > 0 {
				variant(func(d *Case) { d.Phases[pi].Steps[si].MaxPar = 0 })
			}
		}
	}
	if c.Rerun {
		variant(func(d *Case) { d.Rerun, d.RerunKill = false, 0 })
	}
	if c.RerunKill > 0 {
		variant(func(d *Case) { d.RerunKill = 0 })
	}
	if c.Grow {
		variant(func(d *Case) { d.Grow = false })
	}
	if c.Sessions > 1 {
		variant(func(d *Case) { d.Sessions-- })
	}
	// Fewer items, rules, attempts; simpler handling.
	for pi, ph := range c.Phases {
		for si, s := range ph.Steps {
			if len(s.Items) > 1 {
				variant(func(d *Case) { d.Phases[pi].Steps[si].Items = s.Items[:len(s.Items)-1] })
			}
			if s.Handler != "" {
				variant(func(d *Case) { d.Phases[pi].Steps[si].Handler = "" })
			}
			if s.Cache {
				variant(func(d *Case) { d.Phases[pi].Steps[si].Cache = false })
			}
			if s.On.Kind != "" {
				variant(func(d *Case) { d.Phases[pi].Steps[si].On = GOn{MaxRetries: -1, RetryOnSuccess: -1} })
			}
			if ph.Parallel {
				variant(func(d *Case) { d.Phases[pi].Parallel = false })
			}
			if s.When.Kind != "" {
				variant(func(d *Case) { d.Phases[pi].Steps[si].When = GWhen{} })
			}
			if s.From != "" {
				variant(func(d *Case) { d.Phases[pi].Steps[si].From = "" })
			}
			for k := range s.Uses {
				variant(func(d *Case) {
					u := d.Phases[pi].Steps[si].Uses
					d.Phases[pi].Steps[si].Uses = append(u[:k:k], u[k+1:]...)
				})
			}
			if s.UseEnv {
				variant(func(d *Case) { d.Phases[pi].Steps[si].UseEnv = false })
			}
			if s.CPUs > 0 {
				variant(func(d *Case) { d.Phases[pi].Steps[si].CPUs = 0 })
			}
			if s.Pool {
				variant(func(d *Case) { d.Phases[pi].Steps[si].Pool = false })
			}
			if len(s.HUses) > 0 {
				variant(func(d *Case) { d.Phases[pi].Steps[si].HUses = nil })
			}
		}
	}
	for hi, h := range c.Handlers {
		if len(h.Rules) > 1 {
			for ri := range h.Rules {
				variant(func(d *Case) {
					d.Handlers[hi].Rules = append(d.Handlers[hi].Rules[:ri:ri], d.Handlers[hi].Rules[ri+1:]...)
				})
			}
		}
	}
	if len(c.Notify) > 0 {
		variant(func(d *Case) { d.Notify = nil })
	}
	ids := make([]string, 0, len(c.Codes))
	for id := range c.Codes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if xs := c.Codes[id]; len(xs) > 1 {
			variant(func(d *Case) { d.Codes[id] = xs[:len(xs)-1] })
		}
		if xs := c.Codes[id]; len(xs) > 0 && c.Sleep[id] > 0 {
			variant(func(d *Case) { d.Sleep[id] = 0 })
		}
		if slices.ContainsFunc(c.Codes[id], func(x Exit) bool { return x.Out != OutNone }) {
			// Writes no outputs file.
			variant(func(d *Case) {
				for i := range d.Codes[id] {
					d.Codes[id][i].Out = OutNone
				}
			})
		}
	}
	return out
}

func without(xs []string, x string) []string {
	var out []string
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	if xs != nil && out == nil {
		out = []string{}
	}
	return out
}

func (c *Case) clone() *Case {
	d := *c
	d.Phases = make([]GPhase, len(c.Phases))
	for i, ph := range c.Phases {
		d.Phases[i] = ph
		d.Phases[i].Steps = make([]GStep, len(ph.Steps))
		for j, s := range ph.Steps {
			s.Needs = append([]string(nil), s.Needs...)
			if s.HasNeeds && s.Needs == nil {
				s.Needs = []string{}
			}
			s.Items = append([]string(nil), s.Items...)
			if len(s.Items) == 0 {
				s.Items = nil
			}
			s.Makes = append([]string(nil), s.Makes...)
			s.Uses = append([]string(nil), s.Uses...)
			s.HUses = append([]string(nil), s.HUses...)
			d.Phases[i].Steps[j] = s
		}
	}
	d.EndUses = append([]string(nil), c.EndUses...)
	d.Notify = append([]GNotify(nil), c.Notify...)
	d.Part = GPart{Steps: append([]string(nil), c.Part.Steps...), From: append([]string(nil), c.Part.From...)}
	d.Handlers = make([]GHandler, len(c.Handlers))
	for i, h := range c.Handlers {
		d.Handlers[i] = GHandler{Name: h.Name, Rules: append([]GRule(nil), h.Rules...)}
	}
	d.Codes = map[string][]Exit{}
	for k, v := range c.Codes {
		d.Codes[k] = append([]Exit(nil), v...)
	}
	d.HCodes = map[string][]int{}
	for k, v := range c.HCodes {
		d.HCodes[k] = append([]int(nil), v...)
	}
	d.Sleep = map[string]int{}
	for k, v := range c.Sleep {
		d.Sleep[k] = v
	}
	if c.Spend != nil {
		d.Spend, d.HSpend = map[string][]int{}, map[string][]int{}
		for k, v := range c.Spend {
			d.Spend[k] = append([]int(nil), v...)
		}
		for k, v := range c.HSpend {
			d.HSpend[k] = append([]int(nil), v...)
		}
	}
	return &d
}

// usesContext: a condition reads context.flag (the plan then sets it "on").
func (c *Case) usesContext() bool {
	for _, ph := range c.Phases {
		for _, s := range ph.Steps {
			if s.When.Kind == "ctx" {
				return true
			}
		}
	}
	return false
}

// cond is the model's condition of concrete step id of s (an item's, for
// a fan-out's items; the join has none).
func (c *Case) cond(s GStep, id string, join bool, index map[string]int) Cond {
	w := s.When
	if join {
		return Cond{}
	}
	switch w.Kind {
	case "ctx":
		if w.Value == "on" {
			return Cond{Kind: CondTrue}
		}
		return Cond{Kind: CondFalse}
	case "item":
		if id == s.ID+"["+w.Value+"]" {
			return Cond{Kind: CondFalse}
		}
		return Cond{Kind: CondTrue}
	case "status":
		st := map[string]Status{"success": Success, "failure": Failure, "skipped": Skipped, "cached": Cached}[w.Value]
		return Cond{Kind: CondStatus, Step: index[w.Step], Status: st}
	case "output":
		return Cond{Kind: CondOutput, Step: index[w.Step]}
	}
	return Cond{}
}

// maker is Step.Maker of an item of s: for a glob item that is not the
// one the user adds, 1 + the index of the step that makes its file.
func (c *Case) maker(s GStep, grown bool, index map[string]int) int {
	if !s.Glob || grown {
		return 0
	}
	if i, ok := index[s.Up]; ok {
		return i + 1
	}
	return 0
}
