// Package model is an executable reading of faber's contract (SPEC §2–§8 and
// the README's decisions): given a plan reduced to what decides an outcome,
// and the exit code every process will give, it computes every outcome the
// contract allows — each step's final status, attempt number, handler and
// recovery-script runs, and each session's exit code.
//
// It is written from the contract, not from the runner: it knows nothing of
// goroutines, commits or job-slot bookkeeping. Where the contract leaves the
// order of events open (which of several running processes ends first, and
// whether a process ended on its own just before a cancel stop killed it),
// the model explores every order and returns the set of outcomes.
//
// The random-plan test (contract_test.go at the repository root) runs plans
// drawn by Gen through the real binary and checks that what faber did is in
// that set.
package model

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// OnKind is an on_failure form (SPEC §4).
type OnKind int

// The on_failure forms; Command covers the string and structured forms,
// which decide alike.
const (
	OnStop OnKind = iota
	OnContinue
	OnRetry
	OnCommand
)

// OnFailure is a step's result_handling.
type OnFailure struct {
	Kind OnKind
	// Explicit: the plan wrote on_failure (such a step never becomes
	// pending_failed, SPEC §10).
	Explicit bool
	// MaxRetries: retry keyword's budget, or a command handler's.
	MaxRetries int
	// RetryOnSuccess: a command handler's success re-runs the step.
	RetryOnSuccess bool
}

// Rule is an exit-code rule (SPEC §5).
type Rule struct {
	Codes      []int
	MatchAll   bool
	MaxRetries int
	Recovery   bool // has a recovery_script
	// OnBudget: on: [budget]; the only rules a budget failure matches,
	// and they grant it no retry (README "Budgets").
	OnBudget bool
}

// Exit is what one process does: exit with Code, or (Result) exit 0 after
// writing {"status":"failure"} to $FABER_RESULT; and (Out) what it writes to
// its $FABER_OUTPUTS file (README "Step outputs").
type Exit struct {
	Code   int
	Result bool
	Out    Out
}

// Out is what an attempt does with its outputs file.
type Out uint8

// What an attempt writes to $FABER_OUTPUTS.
const (
	// OutNone: nothing (the file is never made).
	OutNone Out = iota
	// OutPublish: the line v=<value>: the attempt, if it succeeds,
	// publishes output v.
	OutPublish
	// OutMalformed: a line without '=': an attempt that exits 0 then
	// fails, like a result-file failure; a failed attempt's file is
	// ignored.
	OutMalformed
)

// Failed reports whether the attempt failed (SPEC §3): a non-zero exit, a
// result file that says failure, or an outputs file that cannot be read.
func (e Exit) Failed() bool { return e.Code != 0 || e.Result || e.Out == OutMalformed }

// codeless: the attempt failed with no exit code that rules can match (a
// result-file failure, a malformed outputs file, or an output it uses that
// was not published): only catch-all rules match it.
func (e Exit) codeless() bool { return e.Result || (e.Code == 0 && e.Out == OutMalformed) }

// missingOutput is how an attempt ends when an output it uses was not
// published: it fails without running a process, with no exit code.
var missingOutput = Exit{Result: true}

// Step is one step of the plan in plan order (fan-out items expanded).
type Step struct {
	ID        string
	Deps      []int // indexes of the steps it needs
	Rules     []Rule
	OnFailure OnFailure
	// Join: the join step of a fan-out, deciding from Items (indexes) once
	// they are settled; it runs no process.
	Join  bool
	Items []int
	// Attempts[n-1] is what attempt n does; past the end, exit 0.
	Attempts []Exit
	// Handler[n-1] is the exit code of the handler run for failed attempt n;
	// past the end, 0.
	Handler []int
	// Cacheable: the step has inputs: (README "Caching"); its key never
	// changes between the model's runs, so an entry is a hit.
	Cacheable bool
	// Dynamic, on a join: its items are read when it is ready (glob:,
	// lines:), each session; Items are every item it may read.
	Dynamic bool
	// Group is an item's join (-1: no item).
	Group int
	// MaxPar, on a join, is its fan-out's max_parallel (0: none): at most
	// that many of its items hold a job slot, but see Plan.Arrays.
	MaxPar int
	// Grown, on an item of a dynamic fan-out: its file appears only after
	// the first session (the user adds it before resuming).
	Grown bool
	// Uses are the steps (indexes, upstream of this one) whose output v
	// its attempts substitute ({steps.ID.outputs.v}); on the end step, any
	// steps. An attempt of a step one of whose Uses is not a success that
	// published v fails without running a process, like a result-file
	// failure; the end step then fails.
	Uses []int
	// CPUs and Pools are its request: CPUs, and one unit of each pool
	// (indexes of Plan.PoolSizes), held with its job slot.
	CPUs  int
	Pools []int
	// HUses are the steps whose output v its on_failure command uses: a
	// handler one of whose values is missing cannot start, and ends the
	// step remediation_failed (README "Step outputs").
	HUses []int
	// When is its condition (README "Conditions"); a fan-out's items
	// carry their own (it may read the item), the join none.
	When Cond
	// Maker, on an item of a dynamic fan-out that is not Grown, is 1 + the
	// index of the step whose attempts make its file (0: it is there from
	// the start).
	Maker int
	// From, on a dynamic join (foreach: {from: ...}), is 1 + the index of
	// the step whose output v it reads: its one item is there when that
	// step published v; when it did not, the items cannot be read and the
	// join fails (README "Fan-out").
	From int
	// Gate is its approval gate (README "Approval gates"). On a join and
	// its items it is the fan-out's one gate: the items wait at it, the
	// first that is ready opens it, and one decision (its timeout's, the
	// user's on the join's ID) applies to every item.
	Gate GateKind
	// Phase, on a step its phase's gate holds (an entry step of a gated
	// phase, or an item of one; never a join), is 1 + the index of that
	// gate in Plan.PhaseGates: the step passes it before its own.
	Phase int
	// Spend[n-1] is what attempt n reports spending in $FABER_RESULT, in
	// units (turns, or quarters of a dollar); HSpend[n-1] what the handler
	// run for failed attempt n reports; past the end, 0. Budget is its own
	// budget: (a fan-out's items each have it), or nil.
	Spend  []int
	HSpend []int
	Budget *Budget
}

// Budget is a budget: as the model sees it: Units (max_turns, or
// max_cost_usd in quarters of a dollar) and Attempts (max_attempts); 0
// is no limit. Steps, on a plan's or a phase's, are the steps it covers.
type Budget struct {
	Units    int
	Attempts int
	Steps    []int
}

// GateKind is a step's approval gate as the model sees it.
type GateKind uint8

// The gates the model knows.
const (
	// GateNone: no approval:.
	GateNone GateKind = iota
	// GateWait: approval: true; the user decides between sessions
	// (Policy.Approve); a session with nothing else to do ends with it
	// open (exit 3).
	GateWait
	// GateApprove, GateReject: a timeout of 1ms decides, at once, but as
	// an event of its own among the processes that end meanwhile.
	GateApprove
	GateReject
)

// CondKind is what a step's condition reads.
type CondKind uint8

// The conditions the model knows.
const (
	// CondNone: no when: (the step runs).
	CondNone CondKind = iota
	// CondTrue, CondFalse: a condition whose answer is fixed (it reads
	// context values, or the item).
	CondTrue
	CondFalse
	// CondStatus: steps.<Step>.status == "<Status>".
	CondStatus
	// CondOutput: steps.<Step>.outputs.v == its value: true when Step
	// published v, else an evaluation error.
	CondOutput
)

// Cond is a step's when: as the model sees it.
type Cond struct {
	Kind   CondKind
	Step   int
	Status Status
}

func (s *Step) attempt(n int) Exit {
	if n >= 1 && n <= len(s.Attempts) {
		return s.Attempts[n-1]
	}
	return Exit{}
}

func (s *Step) handler(n int) int {
	if n >= 1 && n <= len(s.Handler) {
		return s.Handler[n-1]
	}
	return 0
}

// Plan is a plan as the model sees it.
type Plan struct {
	Steps []Step
	End   *Step // the end: step, or nil
	Jobs  int
	// CPUs is the run's CPU capacity (0: no limit) and PoolSizes its
	// pools' sizes (README "Capacity and requests"): a step holding a job
	// slot holds its request too.
	CPUs      int
	PoolSizes []int
	Cancel    bool // stop_mode: cancel or --fail-fast
	// Arrays: the steps run on a batch engine that submits a fan-out's
	// items as job arrays with its own throttle (README "Fan-outs as job
	// arrays"): the items of a fan-out under max_parallel that one
	// scheduling pass (advance) starts while none of them holds a slot
	// may be more than max_parallel, cached items excepted.
	Arrays           bool
	UsePendingFailed bool
	// Policy says what the user does after a session (classify, resume).
	Policy Policy
	// Budgets are the plan's and the phases' budgets (README "Budgets");
	// the steps' own are on them.
	Budgets []Budget
	// PhaseGates are the phases' approval gates (README "Approval gates",
	// "Phases"): one gate, decided once, for the steps whose Phase names
	// it.
	PhaseGates []PhaseGate
}

// PhaseGate is a phase's approval gate: its Name (what the user decides,
// Policy.Approve) and kind.
type PhaseGate struct {
	Name string
	Kind GateKind
}

// hasBudgets: some budget is set (only then are attempts counted).
func (p *Plan) hasBudgets() bool {
	if len(p.Budgets) > 0 {
		return true
	}
	for i := range p.Steps {
		if p.Steps[i].Budget != nil {
			return true
		}
	}
	return false
}

// Policy is what the user does after each session; the random test does
// the same to the real binary.
type Policy struct {
	// Sessions bounds the sessions (run + resumes).
	Sessions int
	// ResumeFailed: a session that ended failed or remediation_failed is
	// resumed (while sessions are left).
	ResumeFailed bool
	// ClassifyRetry says, for a pending_failed step, whether the user
	// classifies it --retry (else --fail) before resuming.
	ClassifyRetry func(stepID string, session int) bool
	// Approve says, for a step awaiting approval at the end of a session,
	// whether the user approves it (else rejects it) before resuming.
	Approve func(stepID string, session int) bool
	// Rerun: once the run is over, the plan is run again (a new run, one
	// session), which finds the first run's cache entries.
	Rerun bool
	// Grow: before the first resume, the user adds the files of the Grown
	// items of dynamic fan-outs.
	Grow bool
}

// Status is a step status (SPEC §3). The active statuses are split by what
// runs: Running (an attempt), Remediating (its handler), Recovering (the
// recovery script or delay of a reserved retry) and Queued (a reserved retry
// waiting for a job slot); the last two are `retrying`.
type Status uint8

// The statuses.
const (
	Pending Status = iota
	Running
	Remediating
	Recovering
	Queued
	Success
	Failure
	RemFailed
	PendFailed
	Canceled
	Interrupted
	Cached
	// Probing: the step's cache key is computed; it holds a job slot.
	Probing
	// Absent: an item of a dynamic fan-out that its last reading did not
	// find (or that was never read): not a step of the run.
	Absent
	// Skipped: its condition was false (README "Conditions"): settled,
	// satisfies its dependents, neither success nor a failure.
	Skipped
	// Awaiting: at its approval gate, waiting for the user (settled: the
	// session may end with it); AwaitTimed: at a gate whose timeout
	// decides (active, with no job slot).
	Awaiting
	AwaitTimed
)

// Name is the status as faber reports it.
func (s Status) Name() string {
	return [...]string{"pending", "in_progress", "remediating", "retrying", "retrying",
		"success", "failure", "remediation_failed", "pending_failed", "canceled", "interrupted",
		"cached", "pending", "(missing)", "skipped", "awaiting_approval", "awaiting_approval"}[s]
}

func (s Status) active() bool {
	return (s >= Running && s <= Queued) || s == Probing || s == AwaitTimed
}

// settled: no more work this session.
func (s Status) settled() bool { return s >= Success && s != Probing && s != Absent && s != AwaitTimed }

// succeeded: success, or cached (it counts as success for dependents and
// the run).
func (s Status) succeeded() bool { return s == Success || s == Cached }

// St is one step's state.
type St struct {
	Status     Status
	Attempt    int
	Handlers   int // handler runs, all sessions
	Recoveries int // recovery-script runs, all sessions
	// Per session.
	RuleUsed   [4]int
	OnFailUsed int
	HandlerN   int
	RemRetries int
	Continued  bool
	Slot       bool
	FailedN    int
	// Classified: failed by classification (or canceled by one); final.
	Classified bool
	// Late: the attempt running when a cancel stop came ends on its own
	// (it had exited before faber's signal reached it).
	Late bool
	// Probed: its cache was looked up this session.
	Probed bool
	// Expanded, on a dynamic join: it read its items this session.
	Expanded bool
	// Published: the step's last successful attempt published output v
	// (for a cached step, the attempt its cache entry names). Kept while
	// the step is a success (resume keeps it); cleared when it starts
	// again.
	Published bool
	// Gate is where its approval gate stands (the run keeps it); Reserved:
	// it came to its gate with a retry reserved, whose attempt number is
	// taken.
	Gate     GateState
	Reserved bool
	// PGate is where its phase's gate stands for it (Step.Phase).
	PGate GateState
	// Units and Ran are what it spent over the run (every session): units
	// its attempts and handlers reported, attempts started (counted in a
	// plan with budgets). Waived: classified --retry, its next start is
	// not refused for a spent budget.
	Units  int
	Ran    int
	Waived bool
}

// GateState is where a step's approval gate stands.
type GateState uint8

// The gate states.
const (
	GateUnasked GateState = iota
	GateOpen
	GateApproved
	// GateRejectedRecorded: rejected between sessions, applied when the
	// step reaches its gate; GateRejected: a rejection applied (the gate
	// asks again when the step runs again).
	GateRejectedRecorded
	GateRejected
)

// World is the state of a run between events.
type World struct {
	S        []St
	End      St
	Stopping bool
	Running  int // job slots held
	Codes    []int
	Session  int
	// Entry is the key of the step's cache entry, "" for none (state-dir
	// wide: kept across runs). A step's key changes only when a dynamic
	// fan-out upstream of it has other items (keyOf).
	Entry []string
	// Pub, next to Entry: the success the entry names published v.
	Pub []bool
	// Run counts the runs before this one; Prev holds their outcomes.
	Run  int
	Prev []StepOut
	// Grown: the files of Grown items exist.
	Grown bool
	// Made: step i has started an attempt in this run or an earlier one
	// (the files its attempts make are there).
	Made []bool

	k string // key, once computed (a world is not changed after that)
}

func (w *World) clone() *World {
	c := *w
	c.k = ""
	c.S = append([]St(nil), w.S...)
	c.Codes = append([]int(nil), w.Codes...)
	c.Entry = append([]string(nil), w.Entry...)
	c.Pub = append([]bool(nil), w.Pub...)
	c.Made = append([]bool(nil), w.Made...)
	c.Prev = append([]StepOut(nil), w.Prev...)
	return &c
}

func (w *World) key() string {
	if w.k != "" {
		return w.k
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v|%v|%d|%v|%d|%v|%v|%d|%v|%v|%v|", w.Stopping, w.End, w.Running, w.Codes, w.Session, w.Entry, w.Pub, w.Run, w.Prev, w.Grown, w.Made)
	for _, s := range w.S {
		fmt.Fprintf(&b, "%v;", s)
	}
	w.k = b.String()
	return w.k
}

// Outcome is what a whole run (every session) ended with.
type Outcome struct {
	Codes []int     // each session's exit code
	Steps []StepOut // plan order, the end step last when there is one
}

// StepOut is one step's final record.
type StepOut struct {
	ID         string
	Status     string
	Attempt    int
	Handlers   int
	Recoveries int
}

// String is the outcome on one line per step, for messages.
func (o Outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit codes %v\n", o.Codes)
	for _, s := range o.Steps {
		fmt.Fprintf(&b, "  %-14s %-18s attempt %d  handlers %d  recoveries %d\n", s.ID, s.Status, s.Attempt, s.Handlers, s.Recoveries)
	}
	return b.String()
}

// Key identifies an outcome.
func (o Outcome) Key() string { return o.String() }

type explorer struct {
	p       *Plan
	budgets bool // p.hasBudgets()
	memo    map[string][]*World
	// Limit bounds the states explored (0: 200,000).
	Limit int
	n     int
	// pass holds the fan-outs (join indexes) whose array pass the
	// advance that runs opened (Plan.Arrays).
	pass map[int]bool
}

// ErrTooBig is returned when a plan has more interleavings than the model
// explores; the random test draws another plan.
var ErrTooBig = fmt.Errorf("model: too many states")

// Outcomes returns every outcome the contract allows for p.
func Outcomes(p *Plan) (map[string]Outcome, error) {
	e := &explorer{p: p, memo: map[string][]*World{}, budgets: p.hasBudgets()}
	w := e.fresh()
	w.Entry = make([]string, len(p.Steps))
	w.Pub = make([]bool, len(p.Steps))
	w.Made = make([]bool, len(p.Steps))
	worlds := []*World{w}
	out := map[string]Outcome{}
	sessions := p.Policy.Sessions
	if sessions < 1 {
		sessions = 1
	}
	for len(worlds) > 0 {
		var next []*World
		seen := map[string]bool{}
		for _, w := range worlds {
			ends, err := e.session(w)
			if err != nil {
				return nil, err
			}
			for _, end := range ends {
				if r := e.resume(end, sessions); r != nil {
					if k := r.key(); !seen[k] {
						seen[k] = true
						next = append(next, r)
					}
					continue
				}
				o := e.outcome(end)
				out[o.Key()] = o
			}
		}
		worlds = next
	}
	return out, nil
}

func (e *explorer) outcome(w *World) Outcome {
	o := Outcome{Codes: w.Codes, Steps: append([]StepOut(nil), w.Prev...)}
	prefix := ""
	if w.Run > 0 {
		prefix = fmt.Sprintf("run%d:", w.Run+1)
	}
	add := func(id string, s St) {
		id = prefix + id
		o.Steps = append(o.Steps, StepOut{ID: id, Status: s.Status.Name(), Attempt: s.Attempt, Handlers: s.Handlers, Recoveries: s.Recoveries})
	}
	for i, s := range w.S {
		add(e.p.Steps[i].ID, s)
	}
	if e.p.End != nil {
		add("end", w.End)
	}
	return o
}

// resume applies the user's policy to a session's end: nil when the user
// stops there.
func (e *explorer) resume(w *World, sessions int) *World {
	code := w.Codes[len(w.Codes)-1]
	if w.Run > 0 {
		return nil // a later run has one session
	}
	if len(w.Codes) >= sessions || !e.resumes(code) {
		if !e.p.Policy.Rerun {
			return nil
		}
		// The plan again: a new run, with the cache as the first left it.
		r := e.fresh()
		r.Entry, r.Codes, r.Run, r.Grown = append([]string(nil), w.Entry...), append([]int(nil), w.Codes...), w.Run+1, w.Grown
		r.Pub = append([]bool(nil), w.Pub...)
		r.Made = append([]bool(nil), w.Made...) // files stay on disk
		r.Prev = e.outcome(w).Steps
		return r
	}
	r := w.clone()
	switch {
	case code == 3:
		// Decide every gate that waits (README "Approval gates"): recorded,
		// applied when the step reaches it.
		fan, phases := map[int]bool{}, map[int]bool{}
		for i := range r.S {
			if r.S[i].Status != Awaiting {
				continue
			}
			if pg := e.p.Steps[i].Phase - 1; pg >= 0 && e.atPhase(w, i) {
				// A phase's gate (where it waited at the end of the
				// session, w: not after a decision made here): one
				// decision, on the phase, for every step it holds.
				if phases[pg] {
					continue
				}
				phases[pg] = true
				ok := e.p.Policy.Approve != nil && e.p.Policy.Approve(e.p.PhaseGates[pg].Name, len(w.Codes))
				for k := range e.p.Steps {
					if s := &r.S[k]; e.p.Steps[k].Phase == pg+1 && !s.Status.succeeded() && s.Status != Absent {
						s.PGate = GateRejectedRecorded
						if ok {
							s.PGate = GateApproved
						}
					}
				}
				continue
			}
			if g := e.fanOf(i); g >= 0 {
				// A fan-out's gate: one decision, on the fan-out, for
				// every item in the run that is not a success (those
				// at the gate, and any other that reaches it later).
				if fan[g] {
					continue
				}
				fan[g] = true
				ok := e.p.Policy.Approve != nil && e.p.Policy.Approve(e.p.Steps[g].ID, len(w.Codes))
				for _, it := range e.p.Steps[g].Items {
					if s := &r.S[it]; !s.Status.succeeded() && s.Status != Absent {
						s.Gate = GateRejectedRecorded
						if ok {
							s.Gate = GateApproved
						}
					}
				}
				continue
			}
			if e.p.Policy.Approve != nil && e.p.Policy.Approve(e.p.Steps[i].ID, len(w.Codes)) {
				r.S[i].Gate = GateApproved
			} else {
				r.S[i].Gate = GateRejectedRecorded
			}
		}
		// Classify every pending_failed step (SPEC §6), then resume.
		for i := range r.S {
			if r.S[i].Status != PendFailed {
				continue
			}
			if e.p.Policy.ClassifyRetry != nil && e.p.Policy.ClassifyRetry(e.p.Steps[i].ID, len(w.Codes)) {
				r.S[i].Status = Pending
				r.S[i].Waived = true
			} else {
				r.S[i].Status = Failure
				r.S[i].Classified = true
				e.cancelDownstream(r, i)
			}
		}
	case code == 1 && e.p.Policy.ResumeFailed:
	default:
		return nil
	}
	// SPEC §8: success kept; failure, remediation_failed, canceled,
	// interrupted back to pending (not what classification failed);
	// pending_failed stays; budgets start afresh.
	for i := range r.S {
		s := &r.S[i]
		switch s.Status {
		case Failure, RemFailed, Canceled, Interrupted, Skipped, Awaiting:
			if !s.Classified {
				s.Status = Pending
			}
		}
		s.RuleUsed = [4]int{}
		s.OnFailUsed, s.HandlerN, s.RemRetries = 0, 0, 0
		s.Continued, s.Slot, s.Late, s.Probed, s.Expanded = false, false, false, false, false
	}
	r.End.Status = Pending
	r.Stopping = false
	r.Running = 0
	r.Session++
	r.Grown = r.Grown || e.p.Policy.Grow // the user adds the Grown items' files before resuming
	return r
}

// fresh is a run before it starts: the items of dynamic fan-outs are not
// read yet.
func (e *explorer) fresh() *World {
	w := &World{S: make([]St, len(e.p.Steps))}
	for i, s := range e.p.Steps {
		if s.Group >= 0 && e.p.Steps[s.Group].Dynamic {
			w.S[i].Status = Absent
		}
	}
	return w
}

// resumes reports whether the user resumes a session that exited code.
func (e *explorer) resumes(code int) bool {
	return code == 3 || (code == 1 && e.p.Policy.ResumeFailed)
}

// cancelDownstream cancels, for good, what waits on a step failed by
// classification.
func (e *explorer) cancelDownstream(w *World, i int) {
	for j := range e.p.Steps {
		if w.S[j].Status == Pending && e.dependsOn(j, i) {
			w.S[j].Status = Canceled
			w.S[j].Classified = true
		}
	}
}

func (e *explorer) dependsOn(j, i int) bool {
	for _, d := range e.p.Steps[j].Deps {
		if d == i || e.dependsOn(d, i) {
			return true
		}
	}
	if e.p.Steps[j].Join {
		for _, d := range e.p.Steps[j].Items {
			if d == i || e.dependsOn(d, i) {
				return true
			}
		}
	}
	return false
}

// session runs one session from w to its end: every world it may end in.
func (e *explorer) session(w *World) ([]*World, error) {
	w = w.clone()
	// Dynamic fan-outs whose needs are met read their items before
	// anything starts.
	for i, def := range e.p.Steps {
		if def.Dynamic && e.depsOK(w, i) {
			e.expand(w, i)
		}
	}
	e.advance(w)
	return e.explore(w)
}

func (e *explorer) explore(w *World) ([]*World, error) {
	k := w.key()
	if r, ok := e.memo[k]; ok {
		return r, nil
	}
	e.n++
	limit := e.Limit
	if limit == 0 {
		limit = 200000
	}
	if e.n > limit {
		return nil, ErrTooBig
	}
	// moves are the ways w may go on, in this order: the timeout of an
	// open gate that several steps share decides, for every step at it,
	// as one event among the processes that end meanwhile; then each
	// active step's end (and, for one the cancel stop caught, its kill).
	var moves []func(*World)
	for pg := range e.p.PhaseGates {
		if e.phaseAtGate(w, pg) {
			moves = append(moves, func(n *World) { e.phaseDecide(n, pg, e.p.PhaseGates[pg].Kind == GateApprove, AwaitTimed) })
		}
	}
	for j := range e.p.Steps {
		if e.p.Steps[j].Join && e.fanAtGate(w, j) {
			moves = append(moves, func(n *World) { e.fanTimeout(n, j) })
		}
	}
	for i := range w.S {
		if !w.S[i].Status.active() || w.S[i].Status == Queued {
			continue
		}
		if w.S[i].Status == AwaitTimed && (e.atPhase(w, i) || e.fanOf(i) >= 0) {
			continue // its phase's or fan-out's gate decides (above)
		}
		moves = append(moves, func(n *World) { e.complete(n, i) })
		if w.S[i].Late {
			// Killed by the cancel stop, rather than ended on its own.
			moves = append(moves, func(n *World) {
				s := &n.S[i]
				e.free(n, s)
				s.Status, s.Late = Canceled, false
			})
		}
	}
	var res []*World
	seen := map[string]bool{}
	for _, m := range moves {
		n := w.clone()
		m(n)
		e.advance(n)
		ends, err := e.explore(n)
		if err != nil {
			return nil, err
		}
		e.n += len(ends) // merging is work too
		if e.n > limit {
			return nil, ErrTooBig
		}
		for _, x := range ends {
			if k := x.key(); !seen[k] {
				seen[k] = true
				res = append(res, x)
			}
		}
	}
	if len(moves) == 0 {
		end := w.clone()
		e.finish(end)
		res = []*World{end}
	}
	e.memo[k] = res
	return res, nil
}

func (e *explorer) satisfied(w *World, d int) bool {
	s := w.S[d]
	return s.Status.succeeded() || s.Status == Skipped || (s.Status == Failure && s.Continued)
}

func (e *explorer) depsOK(w *World, i int) bool {
	for _, d := range e.p.Steps[i].Deps {
		if !e.satisfied(w, d) {
			return false
		}
	}
	return true
}

// advance decides ready joins and fills free job slots in plan order, until
// nothing changes: what faber does between two process ends.
func (e *explorer) advance(w *World) {
	clear(e.pass)
	for {
		if e.decideJoins(w) {
			continue
		}
		if !e.fillOne(w) {
			return
		}
	}
}

// expand reads a dynamic fan-out's items: those found are items of the run
// (pending when new), the others leave it. When the set changed, the join
// and every settled step downstream of it go back to pending.
func (e *explorer) expand(w *World, j int) {
	w.S[j].Expanded = true
	if f := e.p.Steps[j].From - 1; f >= 0 && !e.published(w, f) {
		// The value to read is missing: the join fails, as a failed step
		// (its items stay as they were).
		s := &w.S[j]
		s.Attempt++
		s.Status = Failure
		if e.p.Steps[j].OnFailure.Kind == OnContinue {
			s.Continued = true
		} else {
			e.stop(w)
		}
		return
	}
	changed := false
	for _, it := range e.p.Steps[j].Items {
		s := &w.S[it]
		found := !e.p.Steps[it].Grown || w.Grown
		if mb := e.p.Steps[it].Maker - 1; !e.p.Steps[it].Grown && mb >= 0 {
			// Its file is there once the step that makes it has started
			// an attempt (in this run or an earlier one): not when that
			// step was skipped.
			found = w.Made[mb]
		}
		switch {
		case found && s.Status == Absent:
			s.Status = Pending
			changed = true
		case !found && s.Status != Absent:
			s.Status = Absent
			changed = true
		}
	}
	if !changed {
		return
	}
	for k := range e.p.Steps {
		if k != j && !e.dependsOnVia(k, j) {
			continue
		}
		s := &w.S[k]
		if s.Status.settled() {
			s.Status, s.Classified, s.Continued = Pending, false, false
		}
	}
}

// dependsOnVia reports whether step k needs step j, directly or through
// other steps' needs (not through a join's items).
func (e *explorer) dependsOnVia(k, j int) bool {
	for _, d := range e.p.Steps[k].Deps {
		if d == j || e.dependsOnVia(d, j) {
			return true
		}
	}
	return false
}

// itemSettled: an item lets its join be decided (pending_failed and
// awaiting_approval wait).
func itemSettled(s Status) bool {
	return (s.settled() && s != PendFailed && s != Awaiting) || s == Absent
}

func (e *explorer) decideJoins(w *World) bool {
	for i := range e.p.Steps {
		def := &e.p.Steps[i]
		if !def.Join || w.S[i].Status != Pending || w.Stopping || (def.Dynamic && !w.S[i].Expanded) {
			continue
		}
		if !e.depsOK(w, i) || !e.itemsSettled(w, i) {
			continue
		}
		e.decideJoin(w, i)
		return true
	}
	return false
}

func (e *explorer) itemsSettled(w *World, i int) bool {
	for _, it := range e.p.Steps[i].Items {
		if !itemSettled(w.S[it].Status) {
			return false
		}
	}
	return true
}

func (e *explorer) decideJoin(w *World, i int) {
	s := &w.S[i]
	s.Attempt++
	s.Status = Success
	n, skipped := 0, 0
	for _, it := range e.p.Steps[i].Items {
		st := w.S[it].Status
		if st != Absent {
			n++
		}
		switch {
		case st == Skipped:
			skipped++
		case !st.succeeded() && st != Absent:
			s.Status = Failure
		}
	}
	if s.Status == Success && n > 0 && skipped == n {
		s.Status = Skipped // every item's condition was false
	}
	if s.Status == Failure && e.p.Steps[i].OnFailure.Kind == OnContinue {
		s.Continued = true
	}
}

// fillOne starts the first ready step in plan order if a slot is free and
// its request fits (README "Capacity and requests"): the first ready step
// whose request does not fit what is free is the head, and a later one
// starts only if its request fits in what is free less the head's.
func (e *explorer) fillOne(w *World) bool {
	if w.Running >= e.jobs() {
		return false
	}
	free := e.freeRes(w)
	head := false
	for i := range e.p.Steps {
		// failsAtOnce: its condition cannot be evaluated; the attempt
		// fails without a process, in no array.
		failsAtOnce := false
		def := &e.p.Steps[i]
		s := &w.S[i]
		if def.Join {
			if def.Dynamic && !s.Expanded && s.Status == Pending && !w.Stopping && e.depsOK(w, i) {
				// Read when it comes out of the ready queue, in plan
				// order, while a slot is free.
				e.expand(w, i)
				return true
			}
			continue
		}
		if def.Group >= 0 && e.p.Steps[def.Group].Dynamic && !w.S[def.Group].Expanded {
			continue // its fan-out reads its items first
		}
		switch {
		case s.Status == Queued:
			if e.held(w, i) {
				continue // nothing is decided for it before it may start
			}
			if e.overBudget(w, i) || e.atGate(w, i) {
				return true
			}
			if !e.fits(def, free, &head) {
				continue
			}
			_, bad := e.cond(w, i)
			failsAtOnce = bad || !e.usesOK(w, def)
		case s.Status == Pending && !w.Stopping && e.depsOK(w, i):
			if e.held(w, i) {
				continue
			}
			run, bad := e.cond(w, i)
			if !run && !bad {
				// Its condition is false: skipped, with no slot taken.
				s.Status = Skipped
				s.Published = false
				return true
			}
			if !bad && (e.overBudget(w, i) || e.atGate(w, i)) {
				return true
			}
			if !e.fits(def, free, &head) {
				continue
			}
			failsAtOnce = bad || !e.usesOK(w, def)
			if def.Cacheable && !s.Probed && e.upstreamSucceeded(w, i) && !bad {
				// The key is computed while the step holds a slot.
				s.Probed = true
				s.Status = Probing
				s.Published = false
				s.Slot = true
				w.Running++
				return true
			}
			if !s.Reserved {
				s.Attempt++
			}
			s.Reserved = false
			s.Published = false
			e.made(w, i)
		default:
			continue
		}
		s.Reserved = false
		s.Status = Running
		e.started(s)
		if !failsAtOnce {
			e.openPass(w, i)
		}
		s.Slot = true
		w.Running++
		return true
	}
	return false
}

// held: item i waits for max_parallel: as many of its fan-out's items as
// that hold a slot, and it may not go beyond as a task of the array pass
// this advance opened (Plan.Arrays).
func (e *explorer) held(w *World, i int) bool {
	def := &e.p.Steps[i]
	if def.Group < 0 || e.p.Steps[def.Group].MaxPar <= 0 {
		return false
	}
	if e.inFlight(w, def.Group) < e.p.Steps[def.Group].MaxPar {
		return false
	}
	return !e.pass[def.Group] || def.Cacheable
}

// inFlight counts the items of fan-out g that hold a job slot.
func (e *explorer) inFlight(w *World, g int) int {
	n := 0
	for _, it := range e.p.Steps[g].Items {
		if w.S[it].Slot {
			n++
		}
	}
	return n
}

// openPass: item i, starting, opens its fan-out's array pass when none
// of its items holds a slot (Plan.Arrays).
func (e *explorer) openPass(w *World, i int) {
	g := e.p.Steps[i].Group
	if !e.p.Arrays || g < 0 || e.p.Steps[g].MaxPar <= 0 || e.inFlight(w, g) > 0 {
		return
	}
	if e.pass == nil {
		e.pass = map[int]bool{}
	}
	e.pass[g] = true
}

// keyOf is step i's cache key as far as it can change here: its id and
// its needs' keys; a join's is over its items' (the ones it read).
func (e *explorer) keyOf(w *World, i int) string {
	def := &e.p.Steps[i]
	var b strings.Builder
	b.WriteString(def.ID + "(")
	for _, d := range def.Deps {
		b.WriteString(e.keyOf(w, d) + ",")
	}
	// The values of the outputs it uses (always the same value when
	// published; a missing one is never a hit, as no entry was written
	// without it).
	for _, u := range def.Uses {
		if e.published(w, u) {
			b.WriteString("+")
		} else {
			b.WriteString("-")
		}
	}
	if def.Join {
		b.WriteString("|")
		for _, it := range def.Items {
			if w.S[it].Status != Absent {
				b.WriteString(e.keyOf(w, it) + ",")
			}
		}
	}
	b.WriteString(")")
	return b.String()
}

// published: step u is a success (or cached) that published output v.
func (e *explorer) published(w *World, u int) bool {
	return w.S[u].Status.succeeded() && w.S[u].Published
}

// usesOK: every output def uses was published.
func (e *explorer) usesOK(w *World, def *Step) bool { return e.usesAll(w, def.Uses) }

// usesAll: every output of steps us was published.
func (e *explorer) usesAll(w *World, us []int) bool {
	for _, u := range us {
		if !e.published(w, u) {
			return false
		}
	}
	return true
}

// exitOf is what attempt n of step i does: its process's exit, or, when an
// output it uses is missing or its condition cannot be evaluated, a failure
// with no process.
func (e *explorer) exitOf(w *World, i, n int) Exit {
	def := &e.p.Steps[i]
	if _, bad := e.cond(w, i); bad || !e.usesOK(w, def) {
		return missingOutput
	}
	return def.attempt(n)
}

// made records that step i's attempt runs its process, which makes the
// files its attempts make (s.sh makes them first): not an attempt that
// fails with no process (an output it uses is missing, or its condition
// cannot be evaluated).
func (e *explorer) made(w *World, i int) {
	if _, bad := e.cond(w, i); !bad && e.usesOK(w, &e.p.Steps[i]) {
		w.Made[i] = true
	}
}

// cond evaluates step i's condition now: run, or bad (it cannot be
// evaluated: it reads an output that was not published).
func (e *explorer) cond(w *World, i int) (run, bad bool) {
	c := e.p.Steps[i].When
	switch c.Kind {
	case CondFalse:
		return false, false
	case CondStatus:
		return w.S[c.Step].Status == c.Status, false
	case CondOutput:
		if !e.published(w, c.Step) {
			return false, true
		}
	}
	return true, false
}

// upstreamSucceeded: no need is a continued failure (that is a cache miss
// decided at once, without a lookup).
func (e *explorer) upstreamSucceeded(w *World, i int) bool {
	for _, d := range e.p.Steps[i].Deps {
		if !w.S[d].Status.succeeded() {
			return false
		}
	}
	return true
}

func (e *explorer) jobs() int {
	if e.p.Jobs < 1 {
		return 1
	}
	return e.p.Jobs
}

// res is an amount of each resource the model counts: CPUs, then one
// count per pool.
type res []int

// freeRes is what the steps holding a job slot leave of the capacity (a
// resource without a limit: a large number).
func (e *explorer) freeRes(w *World) res {
	f := make(res, 1+len(e.p.PoolSizes))
	f[0] = e.p.CPUs
	if f[0] == 0 {
		f[0] = 1 << 30
	}
	copy(f[1:], e.p.PoolSizes)
	for i := range w.S {
		if w.S[i].Slot {
			for k, n := range e.request(&e.p.Steps[i]) {
				f[k] -= n
			}
		}
	}
	return f
}

// request is a step's request as a res.
func (e *explorer) request(def *Step) res {
	r := make(res, 1+len(e.p.PoolSizes))
	r[0] = def.CPUs
	for _, p := range def.Pools {
		r[1+p]++
	}
	return r
}

// fits reports whether def's request fits in free, resource by resource,
// for the resources it requests; the first step that does not becomes the
// head (*head is set), whose request is then taken out of free for every
// later step.
func (e *explorer) fits(def *Step, free res, head *bool) bool {
	r := e.request(def)
	for k := range r {
		if r[k] > 0 && r[k] > free[k] { // a resource it does not request never holds it back
			if !*head {
				*head = true
				for k := range r {
					free[k] -= r[k]
				}
			}
			return false
		}
	}
	return true
}

func (e *explorer) free(w *World, s *St) {
	if s.Slot {
		s.Slot = false
		w.Running--
	}
}

// complete ends the process of step i (an attempt, handler, or recovery).
func (e *explorer) complete(w *World, i int) {
	def, s := &e.p.Steps[i], &w.S[i]
	switch s.Status {
	case Running:
		x := e.exitOf(w, i, s.Attempt)
		late := s.Late
		s.Late = false
		if _, bad := e.cond(w, i); e.budgets && !bad && e.usesOK(w, def) {
			s.Units += spendOf(def.Spend, s.Attempt) // what its process reported
		}
		if !x.Failed() {
			e.free(w, s)
			s.Status = Success
			s.Published = x.Out == OutPublish
			if def.Cacheable && s.Probed {
				// Only an attempt whose key was computed this
				// session writes (or drops) the entry: not one that
				// ran after a continued failure upstream, a reserved
				// retry a resume started, or one that failed without
				// a lookup (README "Caching").
				w.Entry[i] = e.keyOf(w, i)
				w.Pub[i] = s.Published
			}
			return
		}
		if def.Cacheable && s.Probed {
			w.Entry[i] = "" // a failure drops the entry
			w.Pub[i] = false
		}
		e.failure(w, i, x, late)
	case Remediating:
		e.handlerDone(w, i)
	case Recovering:
		s.Status = Queued
	case Probing:
		switch {
		case w.Stopping:
			e.free(w, s) // stays pending: the end of the session decides
			s.Status = Pending
		case w.Entry[i] != "" && w.Entry[i] == e.keyOf(w, i):
			e.free(w, s)
			s.Status = Cached
			s.Published = w.Pub[i] // the outputs of the success it names
		default:
			s.Status = Running
			e.started(s)
			if !s.Reserved {
				s.Attempt++
			}
			s.Reserved = false
			e.made(w, i)
		}
	case AwaitTimed:
		// The timeout decides.
		if def.Gate == GateApprove {
			s.Gate = GateApproved
			s.Status = Pending
			if s.Reserved {
				s.Status = Queued
			}
			return
		}
		e.reject(w, i, false)
	}
}

// atGate: step i, about to start, stops at its approval gate (README
// "Approval gates"): it waits there (after a stop: canceled, as a pending
// step would be), or a rejection decided between sessions is applied. An
// approval holds for its later attempts; after a rejection, a new
// attempt asks again.
func (e *explorer) atGate(w *World, i int) bool {
	def, s := &e.p.Steps[i], &w.S[i]
	kind, st, phase := def.Gate, &s.Gate, false
	if def.Phase > 0 && s.PGate != GateApproved {
		// Its phase's gate first (README "Approval gates", "Phases").
		kind, st, phase = e.p.PhaseGates[def.Phase-1].Kind, &s.PGate, true
	}
	switch {
	case kind == GateNone || *st == GateApproved:
		return false
	case *st == GateRejectedRecorded:
		if s.Status == Queued {
			s.Reserved = true // the retry's attempt number is the rejection's
		}
		e.reject(w, i, phase)
		return true
	}
	*st = GateOpen
	if s.Status == Queued {
		s.Reserved = true
	}
	switch {
	case w.Stopping:
		s.Status = Canceled
	case kind == GateWait:
		s.Status = Awaiting
	default:
		s.Status = AwaitTimed
	}
	return true
}

// fanOf is the join of item i's fan-out, or -1 (i is no item).
func (e *explorer) fanOf(i int) int {
	if g := e.p.Steps[i].Group; g >= 0 && g != i && e.p.Steps[g].Join && slices.Contains(e.p.Steps[g].Items, i) {
		return g
	}
	return -1
}

// fanAtGate: some item of fan-out j waits at its gate for the timeout.
func (e *explorer) fanAtGate(w *World, j int) bool {
	for _, it := range e.p.Steps[j].Items {
		if w.S[it].Status == AwaitTimed && !e.atPhase(w, it) {
			return true
		}
	}
	return false
}

// atPhase: step i, at a gate, waits at its phase's (which comes first)
// rather than its own.
func (e *explorer) atPhase(w *World, i int) bool {
	return e.p.Steps[i].Phase > 0 && w.S[i].PGate != GateApproved
}

// phaseAtGate: some step waits at phase gate pg for the timeout.
func (e *explorer) phaseAtGate(w *World, pg int) bool {
	for i := range e.p.Steps {
		if e.p.Steps[i].Phase == pg+1 && w.S[i].Status == AwaitTimed && e.atPhase(w, i) {
			return true
		}
	}
	return false
}

// phaseDecide decides phase gate pg (README "Approval gates", "Phases"),
// as fanDecide a fan-out's, over the steps of the phase.
func (e *explorer) phaseDecide(w *World, pg int, approve bool, at Status) {
	var steps []int
	for i := range e.p.Steps {
		if e.p.Steps[i].Phase == pg+1 {
			steps = append(steps, i)
		}
	}
	e.sharedDecide(w, steps, true, approve, at)
}

// fanTimeout applies the timeout of fan-out j's open gate (README
// "Approval gates", "Fan-outs"): one decision for the whole fan-out.
func (e *explorer) fanTimeout(w *World, j int) {
	e.fanDecide(w, j, e.p.Steps[j].Gate == GateApprove, AwaitTimed)
}

// fanDecide decides fan-out j's gate, over its items.
func (e *explorer) fanDecide(w *World, j int, approve bool, at Status) {
	e.sharedDecide(w, e.p.Steps[j].Items, false, approve, at)
}

// sharedDecide decides a gate that several steps share, a phase's (phase)
// or a fan-out's: the steps at it (status at, at that gate) go on
// (approved: to their own gate or start) or fail, in plan order; every
// other step it holds that is in the run and not a success keeps the
// decision, recorded, for when it reaches the gate (an approval holds for
// its later attempts; a rejection fails its next one).
func (e *explorer) sharedDecide(w *World, steps []int, phase, approve bool, at Status) {
	gate := func(s *St) *GateState {
		if phase {
			return &s.PGate
		}
		return &s.Gate
	}
	var members []int
	for _, i := range steps {
		s := &w.S[i]
		switch {
		case s.Status == at && e.atPhase(w, i) == phase:
			members = append(members, i)
			// Off the gate before any of them fails: a stop that a
			// rejection makes does not cancel the others, decided too.
			s.Status = Pending
		case s.Status.succeeded() || s.Status == Absent:
		case approve:
			*gate(s) = GateApproved
		default:
			*gate(s) = GateRejectedRecorded
		}
	}
	for _, i := range members {
		if s := &w.S[i]; approve {
			*gate(s) = GateApproved
			if s.Reserved {
				s.Status = Queued
			}
			continue
		}
		e.reject(w, i, phase)
	}
}

// reject fails step i for a rejection (at its phase's gate: phase): an
// attempt that runs nothing, which no exit-code rule matches; on_failure
// decides.
func (e *explorer) reject(w *World, i int, phase bool) {
	def, s := &e.p.Steps[i], &w.S[i]
	if !s.Reserved {
		s.Attempt++
	}
	s.Reserved = false
	if phase {
		s.PGate = GateRejected
	} else {
		s.Gate = GateRejected
	}
	s.FailedN = s.Attempt
	if def.Cacheable && s.Probed {
		w.Entry[i] = "" // a failure drops the entry
		w.Pub[i] = false
	}
	if e.budgets && e.spent(w, i) {
		e.budgetFailure(w, i)
		return
	}
	e.onFailure(w, i, false, w.Stopping && e.p.Cancel)
}

// failure is the failure pipeline (SPEC §4, §5) of failed attempt x. late:
// the attempt ended on its own after a cancel stop; nothing it would start
// starts.
func (e *explorer) failure(w *World, i int, x Exit, late bool) {
	def, s := &e.p.Steps[i], &w.S[i]
	if e.budgets && e.spent(w, i) {
		e.budgetFailure(w, i)
		return
	}
	s.FailedN = s.Attempt
	rule := matchRule(def.Rules, x)
	if rule >= 0 && s.RuleUsed[rule] < def.Rules[rule].MaxRetries {
		e.free(w, s)
		if late {
			s.Status = Canceled
			return
		}
		s.RuleUsed[rule]++
		s.Attempt++
		s.Status = Recovering
		if def.Rules[rule].Recovery {
			s.Recoveries++
		}
		return
	}
	e.onFailure(w, i, rule >= 0, late)
}

// onFailure is what follows when the rules decline a failure of step i
// (matched: a rule matched, its retries used up).
func (e *explorer) onFailure(w *World, i int, matched, late bool) {
	def, s := &e.p.Steps[i], &w.S[i]
	of := def.OnFailure
	if e.p.UsePendingFailed && !matched && !of.Explicit {
		e.free(w, s)
		s.Status = PendFailed
		return
	}
	switch of.Kind {
	case OnContinue:
		e.free(w, s)
		s.Status = Failure
		s.Continued = true
	case OnRetry:
		if s.OnFailUsed < of.MaxRetries {
			e.free(w, s)
			if late {
				s.Status = Canceled
				return
			}
			s.OnFailUsed++
			s.Status = Queued
			s.Attempt++
			return
		}
		e.stopStep(w, i, Failure)
	case OnCommand:
		if s.HandlerN > 0 && s.RemRetries >= of.MaxRetries {
			e.stopStep(w, i, RemFailed)
			return
		}
		if late {
			e.free(w, s)
			s.Status = Canceled
			return
		}
		s.Status = Remediating // keeps its slot
		s.Handlers++
	default:
		e.stopStep(w, i, Failure)
	}
}

func matchRule(rules []Rule, x Exit) int {
	if !x.codeless() {
		for i, r := range rules {
			for _, c := range r.Codes {
				if c == x.Code {
					return i
				}
			}
		}
	}
	for i, r := range rules {
		if r.MatchAll {
			return i
		}
	}
	return -1
}

func (e *explorer) handlerDone(w *World, i int) {
	def, s := &e.p.Steps[i], &w.S[i]
	of := def.OnFailure
	s.HandlerN++
	ran := e.usesAll(w, def.HUses) // else it could not start
	if ran && e.budgets {
		s.Units += spendOf(def.HSpend, s.FailedN)
	}
	ok := def.handler(s.FailedN) == 0 && ran
	e.free(w, s)
	switch {
	case ok && of.RetryOnSuccess && s.RemRetries < of.MaxRetries && !(e.budgets && e.spent(w, i)):
		s.RemRetries++
		s.Status = Queued
		s.Attempt++
	case ok:
		s.Status = Failure
		e.stop(w)
	default:
		s.Status = RemFailed
		e.stop(w)
	}
}

func (e *explorer) stopStep(w *World, i int, st Status) {
	s := &w.S[i]
	e.free(w, s)
	s.Status = st
	e.stop(w)
}

// stop: no new step starts; under cancel, what runs is killed (canceled)
// and reserved retries are canceled. An attempt may have ended on its own
// just before the kill reached it: stop marks those that then count as
// ended on their own (Late); fork explores both.
func (e *explorer) stop(w *World) {
	if w.Stopping {
		return
	}
	w.Stopping = true
	// Steps at a gate do not start after a stop (README "Approval gates").
	for j := range w.S {
		if s := &w.S[j]; s.Status == Awaiting || s.Status == AwaitTimed {
			s.Status = Canceled
		}
	}
	if !e.p.Cancel {
		return
	}
	for j := range w.S {
		s := &w.S[j]
		switch s.Status {
		case Running:
			s.Late = true // resolved by the explorer: killed, or ended on its own
		case Remediating, Recovering, Queued:
			e.free(w, s)
			s.Status = Canceled
		}
	}
}

// finish settles what never started (README "What happens when a step
// fails"), runs the end step and evaluates the session.
func (e *explorer) finish(w *World) {
	blocked := map[int]bool{}
	var byPF func(i int) bool
	byPF = func(i int) bool {
		if v, ok := blocked[i]; ok {
			return v
		}
		blocked[i] = false
		deps := e.p.Steps[i].Deps
		if e.p.Steps[i].Join {
			deps = append(append([]int{}, deps...), e.p.Steps[i].Items...)
		}
		for _, d := range deps {
			if w.S[d].Status == PendFailed || w.S[d].Status == Awaiting || (w.S[d].Status == Pending && byPF(d)) {
				blocked[i] = true
				return true
			}
		}
		return false
	}
	for i := range e.p.Steps {
		s := &w.S[i]
		if s.Status != Pending {
			continue
		}
		def := &e.p.Steps[i]
		if def.Join && e.depsOK(w, i) && e.itemsSettled(w, i) && (!def.Dynamic || s.Expanded) {
			// Its needs are met and every item is settled: decided as
			// usual (its items may have been canceled by the stop). A join
			// whose own need failed is canceled like any step.
			e.decideJoin(w, i)
			continue
		}
		if !w.Stopping && byPF(i) {
			continue
		}
		s.Status = Canceled
	}
	status := e.evaluate(w)
	if e.p.End != nil {
		s := &w.End
		s.Attempt++
		x := e.p.End.attempt(s.Attempt)
		x.Out = OutNone // the end step has no outputs file
		if x.Failed() || !e.usesOK(w, e.p.End) {
			s.Status = Failure
			if status == "success" {
				status = "failed"
			}
		} else {
			s.Status = Success
		}
	}
	w.Codes = append(w.Codes, exitCode(status))
	w.Stopping = false
}

func (e *explorer) evaluate(w *World) string {
	var rem, pf, aw, failed bool
	for _, s := range w.S {
		switch s.Status {
		case RemFailed:
			rem = true
		case PendFailed:
			pf = true
		case Awaiting:
			aw = true
		case Failure, Canceled, Interrupted, Pending, Probing:
			failed = true
		}
	}
	switch {
	case rem:
		return "remediation_failed"
	case pf:
		return "pending_failed"
	case aw:
		return "awaiting_approval"
	case failed:
		return "failed"
	}
	return "success"
}

func exitCode(status string) int {
	switch status {
	case "success":
		return 0
	case "pending_failed", "awaiting_approval":
		return 3
	}
	return 1
}

// Keys returns the outcomes' keys, sorted, for messages.
func Keys(m map[string]Outcome) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
