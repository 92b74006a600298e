package exec

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/faber-run/faber/spec"
)

// Store persists the run. Commit must apply the run record (when non-nil),
// the step records and the events atomically, and return only once they are
// committed. main hands the runner an adapter over package state.
type Store interface {
	Commit(run *RunState, steps []*StepState, events []Event) error
}

// Sink receives every committed event, in order, and output lines
// (EvStepOutput) from any goroutine. It must not block.
type Sink interface {
	Event(Event)
}

// Prior is the state a run starts from: nil for a new run; for a resume, the
// records loaded from the store, already prepared by PrepareResume.
type Prior struct {
	Run     *RunState
	Steps   map[string]*StepState
	LastSeq int64
	// Changed and Events are what PrepareResume decided; they are committed
	// with the run record as the session's first transaction.
	Changed []*StepState
	Events  []Event
	// Gone are the records of items that a dynamic fan-out no longer has
	// (README "Fan-out"): one that comes back continues from its record.
	Gone map[string]*StepState
}

// Runner runs one session of a plan.
type Runner struct {
	Plan       *spec.Plan
	RunID      string
	RunDir     string // state-dir/runs/<run-id>
	Store      Store
	Sink       Sink
	Jobs       int  // 0: the plan's jobs, else CPU count
	FailFast   bool // cancel running steps on a stop, whatever the plan's stop_mode
	WantOutput bool // send step output lines to the Sink
	// HardStop, when closed, kills every running process at once (second Ctrl-C).
	HardStop <-chan struct{}
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Self is the argv prefix that runs faber itself (sub-plan steps run
	// their child plan through it); StateDir is the absolute state dir.
	Self     []string
	StateDir string
	// Secrets are values masked besides the plan's secrets: those a parent
	// run handed this child run (the run's meta.json keeps them all).
	Secrets []string
	// NewRunID names a sub-plan step's child run: the caller's run-id maker
	// (state.NewRunID), so parents and children are named by one rule.
	NewRunID func(planName string, now time.Time) string
	// OutDir overrides runs/<run-id>/outputs (a child run shares its
	// parent's, so that later parent steps see the child's outputs).
	OutDir string
	// Control carries requests from other processes (faber classify) to the
	// running session; nil when there is no control channel.
	Control <-chan ControlReq
	// WaitDecisions, while open, makes the session wait instead of ending
	// once nothing runs and a pending_failed step is all that keeps the run
	// from going on: a decision on it comes through Control (the live
	// view's r / x x) and the run goes on. Closing it (the live view's q,
	// or the view gone) ends the wait: the run ends pending_failed as it
	// does without it. Nil: no wait (plain and JSON progress). See
	// awaitDecisions.
	WaitDecisions <-chan struct{}
	// CheckState, if set, is asked after every process a step runs whether
	// the run's state dir is still usable (its file system not full). An
	// error stops the run as a state problem, like a log file faber cannot
	// write: see halt.
	CheckState func() error
	// Cache is the state-dir-wide cache of step results (README,
	// "Caching"); nil turns caching off. NoCache runs every step but still
	// records successes; Force names steps that run whatever the cache says.
	Cache   CacheStore
	NoCache bool
	Force   []string
	// Grown, if set, is told the plan's number of steps when a dynamic
	// fan-out (glob:, lines:) has read its items (faber sets the
	// collector's pace from it).
	Grown func(steps int)
	// CacheHit, if set, is told of the run's first cache hit, once: a run
	// that serves steps from the cache commits them as fast as it can
	// (faber lets its heap grow more between collections from then).
	CacheHit func()
	// Capacity is the run's resolved capacity (spec.ResolveCapacity): what
	// the steps holding a job slot may reserve at once; a 0 field is no limit.
	Capacity spec.Capacity

	run      *RunState
	seq      int64
	steps    []*stepRun
	byID     map[string]*stepRun
	end      *stepRun
	msgs     chan msg
	probes   probePool
	ready    readyHeap
	inflight int
	running  int // slot holders
	// passes are the array passes the fill that runs opened (fanout.go
	// passJoin), closed when it ends; passN numbers them.
	passes  []*arrayPass
	passN   int
	filling bool // fill runs: a start may join an array pass
	jobs    int
	// use is what the slot holders reserved (reserve.go); pools are
	// numbered in file order: poolIdx by name, poolNames and poolSize by
	// number.
	use       inUse
	poolIdx   map[string]int
	poolNames []string
	poolSize  []int
	// parks are the ready steps that did not fit, by request (reserve.go).
	parks    map[reqKey]*park
	parkList []*park
	// requested: a step requests something (waiting.go).
	requested bool
	// hit: a step was served from the cache (CacheHit was told).
	hit bool

	stopping bool
	cancel   bool // stop by killing running steps
	intr     bool
	hard     bool
	fatal    error
	halted   error // the state problem that stopped the run (see halt)
	baseEnv  []string
	outDir   string
	// kinds are the engines the run's attempts ran on (executor.go), made
	// at first use.
	kindsMu  sync.Mutex
	kinds    map[string]executorKind
	planFile string            // the plan file's absolute path (FABER_PLAN)
	shells   map[string]string // shell name -> resolved path
	mask     *Masker           // the plan's secrets, masked in events and output lines
	secrets  []string          // the values mask masks: the plan's and Secrets
	// endStatus and endFailed are what the end step is told (SPEC §7).
	endStatus string
	endFailed []string
	// gone: records of items a dynamic fan-out no longer has (Prior.Gone).
	gone map[string]*StepState
	// stopCtx is done once the session stops everything it runs (an
	// interrupt, a halt, a failed commit): the work of faber's own that
	// may block (a cache probe's cache_key commands and hashing) takes it.
	stopCtx context.Context
	stopAll context.CancelFunc
	// ahead counts the goroutines making log files ahead (makeLogsAhead),
	// which dropAhead waits for.
	ahead sync.WaitGroup
	// gated counts the attempts whose log files are being made while their
	// start is committed, until they are told to start or not: Run waits
	// for them, so that no file is made after it returns (a failed commit
	// tells them not to start and does not wait for their processes).
	gated sync.WaitGroup
	// notes are the session's notifications (notify.go).
	notes notifier
	// gates are the approval gates open in this session, by key (gate.go).
	gates map[string]*openGate
	// budgets: the plan sets a budget (budget.go); spend is what the
	// run's steps spent, per phase and for the plan.
	budgets bool
	spend   spending
	// later is what commitLater holds for the next commit.
	later struct {
		steps []*StepState
		evs   []Event
	}
}

// stepRun is the scheduler's view of one step during this session.
type stepRun struct {
	def        *spec.Step
	st         *StepState
	deps       []*stepRun
	dependents []*stepRun
	waiting    int // dependencies not yet satisfied
	queued     bool
	ruleUsed   map[int]int
	onFailUsed int
	handlerN   int // handler invocations this session
	remRetries int // retries granted by the handler this session
	continued  bool
	ctrl       *procCtrl
	busy       bool // a worker acts for it (work, done)
	slot       bool
	held       *held // what it reserved with its slot (reserve.go), or nil
	isEnd      bool
	failed     *outcome // the failed attempt being handled
	failedN    int      // its attempt number
	// ended is the record of the attempt that just ended, for the next
	// step_status event (attempt_end).
	ended *AttemptEnd
	// Fan-out: join is set on a join step; group (the join step) and
	// counted (settled, as the join last counted it) on an item.
	join    *joinRun
	group   *stepRun
	counted bool
	removed bool // an item its dynamic fan-out no longer has
	cache   stepCache
	// aheadMade is set once the step's log directory was asked for ahead of
	// its start (logDirsAhead), and closed once that directory and its files
	// are made, or will not be (aheadDir).
	aheadMade chan struct{}
}

type msgKind int

const (
	mAttemptDone msgKind = iota
	mStarted
	mRecoveryDone
	mRetryReady
	mHandlerDone
	mLogFailed
	mCacheProbed
)

type msg struct {
	kind    msgKind
	sr      *stepRun
	out     outcome
	pgid    int
	pstart  string
	job     string // mStarted: a batch job's reference
	argv    []string
	hType   string
	invoked time.Time
	delay   time.Duration
	err     error
	// mCacheProbed: the step's key, the entry it was compared with, and
	// why it missed ("" for a hit).
	probe *CacheProbe
	entry *CacheEntry
	why   string
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Run runs the plan until no step can make progress, then runs the end step
// and evaluates the run once. It returns the run status. ctx cancellation is
// an interrupt: running steps are terminated and become interrupted.
func (r *Runner) Run(ctx context.Context, prior *Prior) (string, error) {
	r.stopCtx, r.stopAll = context.WithCancel(context.Background())
	defer r.stopAll()
	r.probes.ch = make(chan func())
	defer close(r.probes.ch) // no probe starts after Run
	r.setup(prior)
	if r.fatal != nil {
		return RunInterrupted, r.fatal
	}
	r.loop(ctx)
	if !r.intr && r.fatal == nil {
		r.settlePending()
		if r.end != nil {
			status, failed := r.evaluate()
			r.runEnd(ctx, status, failed)
		}
	}
	status := r.finish()
	// Notifications never change the status: their failures are recorded
	// after the end event, once they have ended.
	r.waitNotify(ctx)
	if len(r.notes.failed) > 0 {
		r.commitWith(nil, nil, nil)
	}
	r.gated.Wait()
	r.dropAhead()
	if r.fatal != nil {
		return status, r.fatal
	}
	return status, r.halted
}

func (r *Runner) setup(prior *Prior) {
	p := r.Plan
	r.msgs = make(chan msg, 64)
	r.byID = make(map[string]*stepRun, len(p.Steps))
	r.jobs = Jobs(r.Jobs, p)
	r.setupPools()
	r.cancel = r.FailFast || p.StopMode == spec.StopCancel
	r.budgets = p.SetsBudget()
	r.baseEnv = withoutSets(os.Environ())
	r.secrets = append(SecretValues(p), r.Secrets...)
	r.mask = NewMaskerOf(r.secrets)
	// Every path handed to a process must hold in that process's working
	// directory (the plan's, or dir:), so each is made absolute here, once,
	// whatever the caller passed.
	r.RunDir = absPath(r.RunDir)
	r.StateDir = absPath(r.StateDir)
	r.planFile = absPath(p.File)
	r.outDir = filepath.Join(r.RunDir, "outputs")
	if r.OutDir != "" {
		r.outDir = absPath(r.OutDir)
	}
	_ = os.MkdirAll(r.outDir, 0o700)

	now := r.now()
	mk := func(def *spec.Step) *stepRun {
		sr := &stepRun{def: def}
		if prior != nil {
			sr.st = prior.Steps[def.ID]
		}
		if sr.st == nil {
			sr.st = PendingState(def)
		}
		return sr
	}
	for _, def := range p.Steps {
		sr := mk(def)
		r.steps = append(r.steps, sr)
		r.byID[def.ID] = sr
	}
	if p.End != nil {
		r.end = mk(p.End)
		r.end.isEnd = true
	}
	for _, sr := range r.steps {
		for _, d := range sr.def.Deps {
			dep := r.byID[d]
			if dep == nil {
				continue
			}
			sr.deps = append(sr.deps, dep)
			dep.dependents = append(dep.dependents, sr)
		}
	}
	r.wireFanOuts()
	if prior == nil {
		r.run = &RunState{RunID: r.RunID, Plan: p.Name, Status: RunInProgress, StartedAt: now}
		ev := Event{Type: EvRunStarted, Data: &RunStarted{Plan: p.Name, PlanFile: p.File, Jobs: r.jobs, TotalSteps: len(p.Steps), Steps: StepInfos(p)}}
		// A step that never started has no record: it is pending, as the
		// run_started event (and the plan) say, until its start is
		// committed. A 100,000-step run does not write 100,000 records
		// before its first step starts.
		r.commitRun(nil, ev)
	} else {
		r.run = prior.Run
		r.seq = prior.LastSeq
		r.run.Status = RunInProgress
		r.run.FinishedAt = nil
		r.gone = prior.Gone
		r.commitWith(r.run, prior.Changed, prior.Events)
	}
	// Dynamic fan-outs whose needs are satisfied read their items now, each
	// once in the session, before anything starts (README "Fan-out").
	var joins []*stepRun
	for _, sr := range r.steps {
		if sr.join != nil && sr.join.dynamic {
			joins = append(joins, sr)
		}
	}
	for _, j := range joins {
		ready := r.fatal == nil && !r.stopping
		for _, d := range j.deps {
			ready = ready && (d.group == j || satisfied(d))
		}
		if ready {
			r.expand(j, true)
		}
	}
	// Dependency counters; a step whose dependencies are all done is ready.
	// A join step's waiting counts its fan-out step's own needs; its items
	// are counted apart (joinRun.waiting).
	for _, sr := range r.steps {
		for _, d := range sr.deps {
			if d.group != sr && !satisfied(d) {
				sr.waiting++
			}
		}
	}
	for _, sr := range r.steps {
		if sr.st.Status == StatusPending && (sr.join == nil && sr.waiting == 0 || sr.join != nil && !joinWaits(sr)) {
			r.push(sr)
		}
	}
	// Steps whose batch job outlived the owner that died (PrepareResume
	// kept them running): this session waits for their job.
	for _, sr := range r.steps {
		if sr.st.Status == StatusInProgress && sr.st.Job != "" && r.fatal == nil {
			r.reattach(sr)
		}
	}
}

// PendingState is the record of a step that has not started: a session
// does not store it (README "Storage"), readers of the store fill it in
// (FillPending).
func PendingState(def *spec.Step) *StepState {
	needs := append([]string{}, def.Deps...)
	return &StepState{ID: def.ID, Name: def.Name, Phase: def.Phase, Status: StatusPending, Needs: needs, FanOut: def.FanOutOf}
}

// FillPending gives every step of p without a record in prior (one that
// never started) its pending record.
func FillPending(p *spec.Plan, prior *Prior) {
	for _, def := range p.Steps {
		if prior.Steps[def.ID] == nil {
			prior.Steps[def.ID] = PendingState(def)
		}
	}
	if p.End != nil && prior.Steps[p.End.ID] == nil {
		prior.Steps[p.End.ID] = PendingState(p.End)
	}
}

// StepInfos describes the plan's steps (the end step last) for readers.
func StepInfos(p *spec.Plan) []StepInfo {
	out := make([]StepInfo, 0, len(p.Steps)+1)
	for _, s := range p.Steps {
		needs := s.Deps
		if needs == nil {
			needs = []string{}
		}
		out = append(out, StepInfo{ID: s.ID, Name: s.Name, Phase: s.Phase, Needs: needs, FanOut: s.FanOutOf})
	}
	if p.End != nil {
		out = append(out, StepInfo{ID: p.End.ID, Name: p.End.Name, Phase: p.End.Phase, Needs: []string{}})
	}
	return out
}

// ControlReq asks the running session to classify a pending_failed step,
// or, with Usage set, what it uses of its capacity (Usage; Reply unused).
type ControlReq struct {
	Usage  chan<- *Usage
	StepID string
	Action string // ClassifiedRetry or ClassifiedFail
	Reason string
	// Limits are the next attempt's limits of a retry (zero: the step's).
	Limits Limits
	// Gate, when set, is a decision on an approval gate instead.
	Gate  *GateReq
	Reply chan error
}

// classify applies a classification inside the running session.
func (r *Runner) classify(req ControlReq) error {
	if req.Gate != nil {
		return r.decideReq(*req.Gate)
	}
	states := make(map[string]*StepState, len(r.steps))
	for _, sr := range r.steps {
		states[sr.def.ID] = sr.st
	}
	changed, evs, err := ClassifyWith(r.Plan, states, req.StepID, req.Action, req.Reason, req.Limits)
	if err != nil {
		return err
	}
	r.commit(changed, evs...)
	if r.fatal != nil {
		return r.fatal
	}
	if sr := r.byID[req.StepID]; sr != nil && sr.st.Status == StatusPending && sr.waiting == 0 {
		r.push(sr)
	}
	return nil
}

// States returns the step records in plan order (the end step last), for a
// caller that reports on the run after Run returned.
func (r *Runner) States() []*StepState {
	out := make([]*StepState, 0, len(r.steps)+1)
	for _, sr := range r.all() {
		out = append(out, sr.st)
	}
	return out
}

// stopWork ends the blocking work of faber's own that takes stopCtx.
func (r *Runner) stopWork() {
	if r.stopAll != nil {
		r.stopAll()
	}
}

// workCtx is stopCtx, or a context that is never done outside Run.
func (r *Runner) workCtx() context.Context {
	if r.stopCtx == nil {
		return context.Background()
	}
	return r.stopCtx
}
