package exec

import (
	"container/heap"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
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
	// OutDir overrides runs/<run-id>/outputs (a child run shares its
	// parent's, so that later parent steps see the child's outputs).
	OutDir string
	// Control carries requests from other processes (faber classify) to the
	// running session; nil when there is no control channel.
	Control <-chan ControlReq

	run      *RunState
	seq      int64
	steps    []*stepRun
	byID     map[string]*stepRun
	end      *stepRun
	msgs     chan msg
	ready    readyHeap
	inflight int
	running  int // slot holders
	jobs     int
	stopping bool
	cancel   bool // stop by killing running steps
	intr     bool
	hard     bool
	fatal    error
	baseEnv  []string
	outDir   string
	shells   map[string]string // shell name -> resolved path
	// endStatus and endFailed are what the end step is told (SPEC §7).
	endStatus string
	endFailed []string
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
	slot       bool
	isEnd      bool
	failed     *outcome // the failed attempt being handled
	failedN    int      // its attempt number
}

type msgKind int

const (
	mAttemptDone msgKind = iota
	mStarted
	mRecoveryDone
	mRetryReady
	mHandlerDone
)

type msg struct {
	kind    msgKind
	sr      *stepRun
	out     outcome
	pgid    int
	pstart  string
	argv    []string
	hType   string
	invoked time.Time
	delay   time.Duration
	err     error
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
	return status, r.fatal
}

func (r *Runner) setup(prior *Prior) {
	p := r.Plan
	r.msgs = make(chan msg, 64)
	r.byID = make(map[string]*stepRun, len(p.Steps))
	r.jobs = Jobs(r.Jobs, p)
	r.cancel = r.FailFast || p.StopMode == spec.StopCancel
	r.baseEnv = os.Environ()
	r.outDir = filepath.Join(r.RunDir, "outputs")
	if r.OutDir != "" {
		r.outDir = r.OutDir
	}
	_ = os.MkdirAll(r.outDir, 0o755)

	now := r.now()
	var fresh []*StepState
	mk := func(def *spec.Step) *stepRun {
		sr := &stepRun{def: def, ruleUsed: map[int]int{}}
		if prior != nil {
			sr.st = prior.Steps[def.ID]
		}
		if sr.st == nil {
			sr.st = &StepState{ID: def.ID, Name: def.Name, Phase: def.Phase, Status: StatusPending, Needs: append([]string{}, def.Deps...)}
			if sr.st.Needs == nil {
				sr.st.Needs = []string{}
			}
			fresh = append(fresh, sr.st)
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
	if prior == nil {
		r.run = &RunState{RunID: r.RunID, Plan: p.Name, Status: RunInProgress, StartedAt: now}
		ev := Event{Type: EvRunStarted, Fields: map[string]any{"plan": p.Name, "plan_file": p.File, "jobs": r.jobs, "total_steps": len(p.Steps), "steps": StepInfos(p)}}
		r.commitRun(fresh, ev)
	} else {
		r.run = prior.Run
		r.seq = prior.LastSeq
		r.run.Status = RunInProgress
		r.run.FinishedAt = nil
		r.commitWith(r.run, append(prior.Changed, fresh...), prior.Events)
	}
	// Dependency counters; a step whose dependencies are all done is ready.
	for _, sr := range r.steps {
		for _, d := range sr.deps {
			if !satisfied(d) {
				sr.waiting++
			}
		}
	}
	for _, sr := range r.steps {
		if sr.st.Status == StatusPending && sr.waiting == 0 {
			r.push(sr)
		}
	}
}

// satisfied reports whether a dependency lets its dependents start.
func satisfied(d *stepRun) bool {
	return d.st.Status == StatusSuccess || (d.st.Status == StatusFailure && d.continued)
}

func (r *Runner) push(sr *stepRun) {
	if !sr.queued {
		sr.queued = true
		heap.Push(&r.ready, sr)
	}
}

// loop is the scheduler: one goroutine owns all step state; workers report
// back over r.msgs.
func (r *Runner) loop(ctx context.Context) {
	done := ctx.Done()
	hard := r.HardStop
	for {
		r.fill()
		if r.inflight == 0 {
			return
		}
		select {
		case m := <-r.msgs:
			r.handle(m)
		case <-done:
			done = nil
			r.interrupt(false)
		case <-hard:
			hard = nil
			r.interrupt(true)
		case req := <-r.Control:
			req.Reply <- r.classify(req)
		}
	}
}

// fill starts ready steps while job slots are free.
func (r *Runner) fill() {
	for r.ready.Len() > 0 && r.running < r.jobs && !r.intr && r.fatal == nil {
		sr := heap.Pop(&r.ready).(*stepRun)
		sr.queued = false
		if sr.st.Status == StatusPending && r.stopping {
			continue // no new steps start after a stop; settlePending cancels them
		}
		if sr.st.Status != StatusPending && sr.st.Status != StatusRetrying {
			continue
		}
		r.startAttempt(sr)
	}
}

func (r *Runner) handle(m msg) {
	sr := m.sr
	switch m.kind {
	case mStarted:
		sr.st.PGID, sr.st.PStart = m.pgid, m.pstart
		r.commit([]*StepState{sr.st})
	case mAttemptDone:
		r.inflight--
		r.attemptDone(sr, m.out)
	case mRecoveryDone:
		r.inflight--
		r.recoveryDone(sr, m)
	case mRetryReady:
		r.inflight--
		r.retryReady(sr)
	case mHandlerDone:
		r.inflight--
		r.handlerDone(sr, m)
	}
}

func (r *Runner) takeSlot(sr *stepRun) {
	if !sr.slot {
		sr.slot = true
		r.running++
	}
}

func (r *Runner) freeSlot(sr *stepRun) {
	if sr.slot {
		sr.slot = false
		r.running--
	}
}

// startAttempt records the step in_progress, then starts its process.
func (r *Runner) startAttempt(sr *stepRun) {
	st := sr.st
	if st.Status != StatusRetrying {
		st.Attempt++
	}
	now := r.now()
	st.Status = StatusInProgress
	st.StartedAt = timep(now)
	st.FinishedAt = nil
	st.ExitCode = nil
	st.Error = ""
	st.DurationMs = 0
	st.PGID, st.PStart = 0, ""
	st.Hash = StepHash(r.Plan, sr.def)
	if sr.def.PlanPath != "" && st.ChildRunID == "" {
		st.ChildRunID = NewChildRunID(sr.def.ChildName, now)
	}
	r.takeSlot(sr)
	r.commit([]*StepState{st}, r.statusEvent(sr))
	if r.fatal != nil {
		r.freeSlot(sr)
		return
	}
	ps, err := r.attemptSpec(sr)
	sr.ctrl = newCtrl()
	r.inflight++
	ctrl := sr.ctrl
	if err != nil {
		// Cannot happen for a validated plan; record it as a failed attempt
		// rather than losing the step.
		go func() {
			r.msgs <- msg{kind: mAttemptDone, sr: sr, out: outcome{startErr: err, exitCode: 127, started: now, finished: now}}
		}()
		return
	}
	go func() {
		out := runProc(ps, ctrl)
		r.msgs <- msg{kind: mAttemptDone, sr: sr, out: out}
	}()
}

func (r *Runner) attemptDone(sr *stepRun, out outcome) {
	st := sr.st
	st.FinishedAt = timep(out.finished)
	if st.StartedAt != nil {
		st.DurationMs = out.finished.Sub(*st.StartedAt).Milliseconds()
	}
	st.ExitCode = intp(out.exitCode)
	st.PGID, st.PStart = 0, ""
	switch {
	case out.stoppedBy == reasonInterrupt:
		r.freeSlot(sr)
		st.Status = StatusInterrupted
		st.Error = "interrupted"
		r.commit([]*StepState{st}, r.statusEvent(sr))
		return
	case out.stoppedBy == reasonCancel:
		r.freeSlot(sr)
		st.Status = StatusCanceled
		st.Error = "stopped: another step failed (stop_mode: cancel)"
		r.commit([]*StepState{st}, r.statusEvent(sr))
		return
	case !out.failed():
		r.freeSlot(sr)
		st.Status = StatusSuccess
		st.Error = ""
		r.commit([]*StepState{st}, r.statusEvent(sr))
		r.release(sr)
		return
	}
	st.Error = out.errorText()
	if sr.def.PlanPath != "" && out.exitCode == childPendingExit && out.stoppedBy == "" {
		// A child run waiting for classification: the step waits too,
		// whatever the parent's settings (SPEC §10).
		r.freeSlot(sr)
		st.Status = StatusPendingFailed
		r.commit([]*StepState{st}, r.statusEvent(sr))
		return
	}
	r.failure(sr, out)
}

// childPendingExit is faber's exit code for a run that ends pending_failed.
const childPendingExit = 3

// release lets dependents of a done step start.
func (r *Runner) release(sr *stepRun) {
	for _, d := range sr.dependents {
		d.waiting--
		if d.waiting == 0 && d.st.Status == StatusPending {
			r.push(d)
		}
	}
}

// failure is the failure pipeline (SPEC §4, §5): exit-code rules first, then
// on_failure. It is entered for every failed attempt that faber did not stop
// itself.
func (r *Runner) failure(sr *stepRun, out outcome) {
	st, def := sr.st, sr.def
	sr.failed, sr.failedN = &out, st.Attempt
	matched := false
	if def.FailureHandler != "" {
		fh := r.Plan.FailureHandlers[def.FailureHandler]
		if rule := MatchRule(fh, out.exitCode, out.resultStatus == "failure" && out.exitCode == 0, out.stderrTail); rule != nil {
			matched = true
			if sr.ruleUsed[rule.Index] < rule.MaxRetries {
				r.reserveRetry(sr, fh, rule, out)
				return
			}
		}
	}
	of := def.OnFailure
	if r.Plan.UsePendingFailed && !matched && !of.Explicit && !sr.isEnd && !r.intr {
		r.freeSlot(sr)
		st.Status = StatusPendingFailed
		r.commit([]*StepState{st}, r.statusEvent(sr))
		return
	}
	switch of.Kind {
	case spec.OnContinue:
		r.freeSlot(sr)
		st.Status = StatusFailure
		sr.continued = true
		r.commit([]*StepState{st}, r.statusEvent(sr), Event{Type: EvWarning, StepID: def.ID, Attempt: st.Attempt,
			Fields: map[string]any{"message": fmt.Sprintf("step %q failed (%s); on_failure: continue, dependents run anyway", def.ID, st.Error)}})
		r.release(sr)
	case spec.OnRetry:
		if sr.onFailUsed < of.MaxRetries && !r.intr {
			sr.onFailUsed++
			r.freeSlot(sr)
			st.Status = StatusRetrying
			st.Attempt++
			r.commit([]*StepState{st}, r.statusEvent(sr))
			r.push(sr)
			return
		}
		r.stopStep(sr, StatusFailure)
	case spec.OnCommand, spec.OnStructured:
		if sr.handlerN > 0 && sr.remRetries >= of.MaxRetries {
			st.Error = fmt.Sprintf("%s (still failing after %d handler %s)", st.Error, sr.remRetries, plural(sr.remRetries, "retry", "retries"))
			r.remediationFailed(sr)
			return
		}
		r.invokeHandler(sr, out)
	default:
		r.stopStep(sr, StatusFailure)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// stopStep finalises a failed step and stops the run (SPEC §4 `stop`).
func (r *Runner) stopStep(sr *stepRun, status string) {
	r.freeSlot(sr)
	sr.st.Status = status
	r.commit([]*StepState{sr.st}, r.statusEvent(sr))
	if !sr.isEnd {
		r.stop()
	}
}

func (r *Runner) remediationFailed(sr *stepRun) {
	r.stopStep(sr, StatusRemediationFailed)
}

// stop makes the run stop: no new steps start; under stop_mode cancel (or
// --fail-fast) running steps are terminated and become canceled.
func (r *Runner) stop() {
	if r.stopping {
		return
	}
	r.stopping = true
	if !r.cancel {
		return
	}
	for _, sr := range r.steps {
		switch sr.st.Status {
		case StatusInProgress, StatusRetrying:
			if sr.ctrl != nil && sr.inFlight() {
				sr.ctrl.Stop(reasonCancel, false)
			} else if sr.st.Status == StatusRetrying && sr.queued {
				sr.st.Status = StatusCanceled
				sr.st.Error = "stopped: another step failed (stop_mode: cancel)"
				r.commit([]*StepState{sr.st}, r.statusEvent(sr))
			}
		}
	}
}

// inFlight reports whether a worker is busy for the step (its ctrl is live).
func (sr *stepRun) inFlight() bool { return sr.ctrl != nil && !sr.queued }

// reserveRetry reserves the retry in one commit (status retrying, attempt+1,
// step_retry_reserved), then runs the recovery script, then waits the delay.
func (r *Runner) reserveRetry(sr *stepRun, fh *spec.FailureHandler, rule *spec.Rule, out outcome) {
	st := sr.st
	sr.ruleUsed[rule.Index]++
	k := sr.ruleUsed[rule.Index]
	delay := RetryDelay(rule, k)
	failedN := st.Attempt
	r.freeSlot(sr)
	st.Status = StatusRetrying
	st.Attempt++
	fields := map[string]any{
		"failure_handler":  fh.Name,
		"rule":             rule.Index,
		"retry_count":      k,
		"max_retries":      rule.MaxRetries,
		"failed_attempt":   failedN,
		"delay_ms":         delay.Milliseconds(),
		"error":            st.Error,
		"failed_exit_code": out.exitCode,
	}
	r.commit([]*StepState{st}, r.statusEvent(sr), Event{Type: EvRetryReserved, StepID: st.ID, Attempt: st.Attempt, Fields: fields})
	if r.fatal != nil {
		return
	}
	sr.ctrl = newCtrl()
	ctrl := sr.ctrl
	r.inflight++
	if rule.RecoveryScript == "" {
		go func() { r.msgs <- msg{kind: mRecoveryDone, sr: sr, out: outcome{exitCode: -1}, delay: delay} }()
		return
	}
	ps, err := r.auxSpec(sr, "recovery", rule.RecoveryScript, 10*time.Minute)
	go func() {
		if err != nil {
			r.msgs <- msg{kind: mRecoveryDone, sr: sr, err: err, out: outcome{exitCode: 127}, delay: delay}
			return
		}
		o := runProc(ps, ctrl)
		r.msgs <- msg{kind: mRecoveryDone, sr: sr, out: o, delay: delay, argv: ps.argv}
	}()
}

func (r *Runner) recoveryDone(sr *stepRun, m msg) {
	st := sr.st
	delay := m.delay
	if m.out.exitCode != -1 {
		f := map[string]any{"failed_attempt": sr.failedN, "error": m.out.errorText()}
		if m.err != nil {
			f["error"] = m.err.Error()
		}
		ev := Event{Type: EvRecoveryFinished, StepID: st.ID, Attempt: sr.failedN, ExitCode: intp(m.out.exitCode), Fields: f}
		if m.out.exitCode == 0 && m.err == nil {
			delete(f, "error")
		}
		r.commit(nil, ev)
	}
	if r.retryStopped(sr) {
		return
	}
	if delay <= 0 {
		r.retryReady(sr)
		return
	}
	r.inflight++
	ctrl := sr.ctrl
	go func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctrl.stop:
		}
		r.msgs <- msg{kind: mRetryReady, sr: sr}
	}()
}

func (r *Runner) endRetry(sr *stepRun, status, errText string) {
	sr.st.Status = status
	sr.st.Error = errText
	r.commit([]*StepState{sr.st}, r.statusEvent(sr))
}

// retryStopped ends a reserved retry that an interrupt or a cancel stopped
// during its recovery script or delay; it reports whether it did.
func (r *Runner) retryStopped(sr *stepRun) bool {
	switch reason := sr.ctrl.Reason(); {
	case reason == reasonInterrupt || r.intr:
		r.endRetry(sr, StatusInterrupted, "interrupted")
		return true
	case reason == reasonCancel:
		r.endRetry(sr, StatusCanceled, "stopped: another step failed (stop_mode: cancel)")
		return true
	}
	return false
}

// retryReady queues a reserved retry for a job slot.
func (r *Runner) retryReady(sr *stepRun) {
	if !r.retryStopped(sr) {
		r.push(sr)
	}
}

// invokeHandler runs the step's on_failure command (SPEC §4). The step keeps
// its job slot while the handler runs.
func (r *Runner) invokeHandler(sr *stepRun, out outcome) {
	st, of := sr.st, sr.def.OnFailure
	hType := "command"
	var args []spec.Arg
	if of.Kind == spec.OnStructured {
		hType = "structured"
		args = of.Args
	}
	vars := r.vars(sr, sr.failedN, &out)
	argv, _, err := r.Plan.ResolveCommand(of.Command, args, vars)
	st.Status = StatusRemediating
	ev := r.statusEvent(sr)
	if err == nil {
		ev.Fields["handler_command"] = subst.Join(argv)
	}
	r.commit([]*StepState{st}, ev)
	if r.fatal != nil {
		return
	}
	sr.ctrl = newCtrl()
	ctrl := sr.ctrl
	r.inflight++
	invoked := r.now()
	if err != nil {
		go func() {
			r.msgs <- msg{kind: mHandlerDone, sr: sr, err: err, hType: hType, invoked: invoked, out: outcome{exitCode: 127}}
		}()
		return
	}
	timeout := HandlerTimeout(r.Plan, sr.def)
	ps := r.procFor(sr, "handler", argv, timeout, sr.failedN, &out, vars)
	go func() {
		o := runProc(ps, ctrl)
		r.msgs <- msg{kind: mHandlerDone, sr: sr, out: o, argv: argv, hType: hType, invoked: invoked}
	}()
}

func (r *Runner) handlerDone(sr *stepRun, m msg) {
	st, of := sr.st, sr.def.OnFailure
	sr.handlerN++
	out := m.out
	ok := m.err == nil && !out.failed()
	msgText := ""
	if m.err != nil {
		msgText = m.err.Error()
	} else if out.resultMessage != "" {
		msgText = clip(out.resultMessage)
	} else if !ok {
		msgText = out.errorText()
	} else {
		msgText = "handler succeeded"
	}
	res := &HandlerResult{Status: "success", Message: msgText, ExitCode: out.exitCode, ActionTaken: "stop"}
	if !ok {
		res.Status = "failure"
	}
	reason := sr.ctrl.Reason()
	retry := ok && of.RetryOnSuccess && sr.remRetries < of.MaxRetries && reason == "" && !r.intr
	if retry {
		sr.remRetries++
		res.ActionTaken = "retry_step"
	}
	invoked := m.invoked
	st.Remediation = &Remediation{
		HandlerType:      m.hType,
		HandlerCommand:   subst.Join(m.argv),
		HandlerInvokedAt: &invoked,
		HandlerResult:    res,
		RetryCount:       sr.remRetries,
		MaxRetries:       of.MaxRetries,
	}
	hev := Event{Type: EvHandlerInvoked, StepID: st.ID, Attempt: sr.failedN, Fields: map[string]any{
		"phase":           st.Phase,
		"original_status": StatusFailure,
		"handler_type":    m.hType,
		"handler_command": st.Remediation.HandlerCommand,
		"handler_argv":    m.argv,
		"handler_result":  res,
		"retry_count":     sr.remRetries,
		"max_retries":     of.MaxRetries,
		"error":           st.Error,
	}}
	switch {
	case reason == reasonInterrupt || r.intr:
		r.freeSlot(sr)
		st.Status = StatusInterrupted
		r.commit([]*StepState{st}, hev, r.statusEvent(sr))
	case reason == reasonCancel:
		r.freeSlot(sr)
		st.Status = StatusCanceled
		r.commit([]*StepState{st}, hev, r.statusEvent(sr))
	case retry:
		r.freeSlot(sr)
		st.Status = StatusRetrying
		st.Attempt++
		r.commit([]*StepState{st}, hev, r.statusEvent(sr))
		r.push(sr)
	case ok:
		// Handler succeeded but grants no retry: the step stays failed.
		r.freeSlot(sr)
		st.Status = StatusFailure
		r.commit([]*StepState{st}, hev, r.statusEvent(sr))
		if !sr.isEnd {
			r.stop()
		}
	default:
		r.freeSlot(sr)
		st.Status = StatusRemediationFailed
		st.Error = fmt.Sprintf("%s; on_failure handler %s failed: %s", st.Error, firstWord(of.Command), msgText)
		r.commit([]*StepState{st}, hev, r.statusEvent(sr))
		if !sr.isEnd {
			r.stop()
		}
	}
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

func firstDur(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// interrupt terminates everything running (SIGTERM, or SIGKILL when hard).
func (r *Runner) interrupt(hard bool) {
	r.intr = true
	r.hard = r.hard || hard
	for _, sr := range r.all() {
		if sr.ctrl != nil {
			sr.ctrl.Stop(reasonInterrupt, hard)
		}
		if sr.queued && sr.st.Status == StatusRetrying {
			sr.queued = false
			r.endRetry(sr, StatusInterrupted, "interrupted")
		}
	}
}

func (r *Runner) all() []*stepRun {
	if r.end == nil {
		return r.steps
	}
	return append(append([]*stepRun{}, r.steps...), r.end)
}

// settlePending decides the steps that never started: canceled when the run
// stopped or an upstream step failed for good; left pending when they wait
// only on a pending_failed step (they run after classification and resume).
func (r *Runner) settlePending() {
	var changed []*StepState
	var evs []Event
	blockedByPF := map[*stepRun]bool{}
	var visit func(sr *stepRun) bool
	visit = func(sr *stepRun) bool {
		if v, ok := blockedByPF[sr]; ok {
			return v
		}
		blockedByPF[sr] = false
		for _, d := range sr.deps {
			if d.st.Status == StatusPendingFailed || (d.st.Status == StatusPending && visit(d)) {
				blockedByPF[sr] = true
				return true
			}
		}
		return false
	}
	for _, sr := range r.steps {
		if sr.st.Status != StatusPending {
			continue
		}
		if !r.stopping && visit(sr) {
			continue
		}
		sr.st.Status = StatusCanceled
		sr.st.Error = r.cancelReason(sr)
		changed = append(changed, sr.st)
		evs = append(evs, r.statusEvent(sr))
	}
	if len(changed) > 0 {
		r.commit(changed, evs...)
	}
}

func (r *Runner) cancelReason(sr *stepRun) string {
	for _, d := range sr.deps {
		switch d.st.Status {
		case StatusFailure, StatusRemediationFailed, StatusCanceled, StatusPendingFailed:
			return fmt.Sprintf("upstream step %q is %s", d.def.ID, d.st.Status)
		}
	}
	return "the run stopped"
}

// evaluate computes the run status from the step statuses (SPEC §10) and the
// failed step ids in plan order. The end step is not counted.
func (r *Runner) evaluate() (string, []string) {
	var failed []string
	var remFailed, pendFailed, anyFailed bool
	for _, sr := range r.steps {
		switch sr.st.Status {
		case StatusRemediationFailed:
			remFailed = true
			failed = append(failed, sr.def.ID)
		case StatusPendingFailed:
			pendFailed = true
			failed = append(failed, sr.def.ID)
		case StatusFailure:
			anyFailed = true
			failed = append(failed, sr.def.ID)
		case StatusCanceled, StatusInterrupted:
			anyFailed = true
		case StatusPending:
			if !pendFailed {
				anyFailed = true
			}
		}
	}
	switch {
	case r.intr:
		return RunInterrupted, failed
	case remFailed:
		return RunRemediationFailed, failed
	case pendFailed:
		return RunPendingFailed, failed
	case anyFailed:
		return RunFailed, failed
	}
	return RunSuccess, failed
}

// runEnd runs the explicit end step as a new attempt (SPEC §7).
func (r *Runner) runEnd(ctx context.Context, status string, failed []string) {
	sr := r.end
	sr.st.Status = StatusPending
	r.stopping = false
	r.endStatus = status
	r.endFailed = failed
	r.push(sr)
	r.loop(ctx)
}

// finish evaluates the run once and writes the end event with the run record.
func (r *Runner) finish() string {
	status, failed := r.evaluate()
	if r.fatal != nil {
		status = RunInterrupted
	}
	if r.end != nil && !r.intr && status == RunSuccess && r.end.st.Status != StatusSuccess {
		status = RunFailed
	}
	if r.end != nil && r.intr && r.end.st.Status == StatusInProgress {
		status = RunInterrupted
	}
	now := r.now()
	r.run.Status = status
	r.run.FinishedAt = &now
	typ := EvWorkflowFailed
	if status == RunSuccess {
		typ = EvWorkflowCompleted
	}
	if failed == nil {
		failed = []string{}
	}
	ev := Event{Type: typ, Status: status, Fields: map[string]any{
		"evaluated_by_end_step": true,
		"total_steps":           len(r.steps),
		"failed_steps_count":    len(failed),
		"failed_steps":          failed,
	}}
	if r.end != nil {
		ev.Fields["end_step_status"] = r.end.st.Status
	}
	if r.fatal == nil {
		r.commitRun(nil, ev)
	}
	return status
}

// statusEvent is the step_status event for the step's current record. It
// carries what a reader needs to rebuild `faber status` from the log alone.
func (r *Runner) statusEvent(sr *stepRun) Event {
	st := sr.st
	f := map[string]any{"phase": st.Phase}
	if st.Error != "" {
		f["error"] = st.Error
	}
	if st.StartedAt != nil {
		f["started_at"] = st.StartedAt.UTC().Format(time.RFC3339Nano)
	}
	if st.FinishedAt != nil && st.Status != StatusInProgress {
		f["finished_at"] = st.FinishedAt.UTC().Format(time.RFC3339Nano)
		f["duration_ms"] = st.DurationMs
	}
	if st.ChildRunID != "" {
		f["child_run_id"] = st.ChildRunID
	}
	ev := Event{Type: EvStepStatus, StepID: st.ID, Attempt: st.Attempt, Status: st.Status, Fields: f}
	if st.ExitCode != nil && st.Status != StatusInProgress {
		ev.ExitCode = intp(*st.ExitCode)
	}
	return ev
}

func (r *Runner) commit(steps []*StepState, evs ...Event) {
	r.commitWith(nil, steps, evs)
}

func (r *Runner) commitRun(steps []*StepState, evs ...Event) {
	r.commitWith(r.run, steps, evs)
}

func (r *Runner) commitWith(run *RunState, steps []*StepState, evs []Event) {
	if r.fatal != nil {
		return
	}
	now := r.now()
	for i := range evs {
		r.seq++
		evs[i].Seq = r.seq
		evs[i].Time = now
		evs[i].RunID = r.RunID
		evs[i].JSON = nil
	}
	var err error
	for i := range evs {
		if evs[i].JSON, err = evs[i].MarshalJSON(); err != nil {
			err = fmt.Errorf("event %s: %w", evs[i].Type, err)
			break
		}
	}
	if err == nil {
		err = r.Store.Commit(run, steps, evs)
	}
	if err != nil {
		r.seq -= int64(len(evs))
		r.fatal = fmt.Errorf("cannot record the run's state: %w", err)
		for _, sr := range r.all() {
			if sr.ctrl != nil {
				sr.ctrl.Stop(reasonInterrupt, true)
			}
		}
		r.intr = true
		return
	}
	if r.Sink != nil {
		for _, e := range evs {
			r.Sink.Event(e)
		}
	}
}

// MatchRule returns the rule of fh that handles a failure (SPEC §5): the first
// rule listing the exit code (and whose stderr_matches, if any, matches) wins
// wherever it stands; else the first matching catch-all. A failure reported
// only through the result file (exit code 0) matches catch-alls only.
func MatchRule(fh *spec.FailureHandler, code int, resultOnly bool, stderr []byte) *spec.Rule {
	if fh == nil {
		return nil
	}
	ok := func(rule *spec.Rule) bool {
		return rule.StderrMatches == nil || rule.StderrMatches.Match(stderr)
	}
	if !resultOnly {
		for _, rule := range fh.Rules {
			for _, c := range rule.ExitCodes {
				if c == code && ok(rule) {
					return rule
				}
			}
		}
	}
	for _, rule := range fh.Rules {
		if rule.MatchAll && ok(rule) {
			return rule
		}
	}
	return nil
}

// RetryDelay is the wait before the k-th retry (k from 1) under a rule:
// delay for fixed backoff; delay·2^(k−1) for exponential, capped at max_delay.
func RetryDelay(rule *spec.Rule, k int) time.Duration {
	d := rule.Delay
	if d <= 0 {
		return 0
	}
	if rule.Backoff == spec.BackoffExponential {
		for i := 1; i < k; i++ {
			if rule.MaxDelay > 0 && d >= rule.MaxDelay {
				break
			}
			if d > time.Duration(1<<62)/2 {
				break
			}
			d *= 2
		}
	}
	if rule.MaxDelay > 0 && d > rule.MaxDelay {
		d = rule.MaxDelay
	}
	return d
}

// StepInfos describes the plan's steps (the end step last) for readers.
func StepInfos(p *spec.Plan) []StepInfo {
	out := make([]StepInfo, 0, len(p.Steps)+1)
	for _, s := range p.Steps {
		needs := s.Deps
		if needs == nil {
			needs = []string{}
		}
		out = append(out, StepInfo{ID: s.ID, Name: s.Name, Phase: s.Phase, Needs: needs})
	}
	if p.End != nil {
		out = append(out, StepInfo{ID: p.End.ID, Name: p.End.Name, Phase: p.End.Phase, Needs: []string{}})
	}
	return out
}

// ControlReq asks the running session to classify a pending_failed step.
type ControlReq struct {
	StepID string
	Action string // ClassifiedRetry or ClassifiedFail
	Reason string
	Reply  chan error
}

// classify applies a classification inside the running session.
func (r *Runner) classify(req ControlReq) error {
	states := make(map[string]*StepState, len(r.steps))
	for _, sr := range r.steps {
		states[sr.def.ID] = sr.st
	}
	changed, evs, err := Classify(r.Plan, states, req.StepID, req.Action, req.Reason)
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
