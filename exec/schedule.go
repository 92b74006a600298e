package exec

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The scheduler (SPEC §2, §3): dependencies, job slots, starting attempts and
// settling what can no longer run. One goroutine (loop) owns all step state.

// satisfied reports whether a dependency lets its dependents start.
func satisfied(d *stepRun) bool {
	return Status(d.st.Status).Satisfies() || (d.st.Status == StatusFailure && d.continued)
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
	wait := r.WaitDecisions
	// A stop that came before the loop (a Ctrl-C while the run was set
	// up, or faber stop of a dead owner's run: README, "faber stop")
	// starts nothing: what setup re-attached to is stopped at once.
	select {
	case <-done:
		done = nil
		r.interrupt(false)
	default:
	}
	for {
		r.fill()
		if r.flushLater() {
			continue // a join may have become ready
		}
		deadline, timed := r.nextDeadline()
		if r.inflight == 0 && !r.awaitDecisions(wait) && !timed {
			return
		}
		var gateTimer <-chan time.Time
		var t *time.Timer
		if timed {
			// The earliest deadline of an open approval gate (gate.go).
			t = time.NewTimer(time.Until(deadline))
			gateTimer = t.C
		}
		select {
		case <-gateTimer:
			r.timeouts()
		case m := <-r.msgs:
			r.handle(m)
			r.drain()
		case <-done:
			done = nil
			r.interrupt(false)
		case <-hard:
			hard = nil
			r.interrupt(true)
		case req := <-r.Control:
			if req.Usage != nil {
				req.Usage <- r.usage() // buffered by the asker
			} else {
				req.Reply <- r.classify(req)
			}
		case <-wait:
			wait = nil // decisions left for later (awaitDecisions)
		}
		if t != nil {
			t.Stop()
		}
	}
}

// maxDrain bounds the reports drain handles at once.
const maxDrain = 256

// drain handles the reports that are already there before the loop
// flushes what commitLater holds: the cache hits (and successes) reported
// meanwhile are then committed in one transaction, not one each (a
// 10,000-item cached fan-out is 10,000 hits). Job slots are filled
// between two reports, as if each had come alone: a slot freed by the
// first is taken before the second is read, so a stop in the second
// cancels what started rather than keeping it from starting (the order
// internal/model explores; contract seed 40310 found the difference).
func (r *Runner) drain() {
	for range maxDrain {
		select {
		case m := <-r.msgs:
			r.fill()
			r.handle(m)
		default:
			return
		}
	}
}

// fill starts ready steps while job slots are free, in plan order (the
// ready heap, and the steps parked because they did not fit), packing
// requests (README "Capacity and requests"): a step that would take a
// slot starts only if its request fits what is free less the request of
// the head, the first ready step in plan order that did not fit; it and
// those after it that do not fit are parked (reserve.go) and stay ready.
// Joins, fan-out expansions and when: skips take no slot and need no room;
// they may make steps ready, so the order starts again after each: the
// head is always the first ready step that does not fit.
func (r *Runner) fill() {
	var head *request
	again := func() {
		head = nil
		r.unfailParks()
	}
	again()
	r.filling = true
	defer func() {
		r.filling = false
		r.closePasses()
	}()
	// let is the last item of a fan-out under max_parallel that came out
	// of the ready queue: if it took no slot and was not held, the next
	// held item of its fan-out may go (releaseHeld).
	var let *stepRun
	letGo := func() {
		if let != nil && !let.slot {
			r.releaseHeld(let.group)
		}
		let = nil
	}
	defer letGo()
	for r.running < r.jobs && !r.intr && r.fatal == nil {
		letGo()
		sr := r.nextReady()
		if sr == nil {
			break
		}
		if sr.group != nil && sr.group.join.maxPar > 0 {
			let = sr
		}
		sr.queued = false
		if sr.st.Status == StatusPending && r.stopping {
			continue // no new steps start after a stop; settlePending cancels them
		}
		if sr.st.Status != StatusPending && sr.st.Status != StatusRetrying {
			continue
		}
		if sr.removed || sr.waiting > 0 || gated(sr) {
			continue // queued before its fan-out changed, or it reads its items first
		}
		if sr.join != nil {
			if sr.join.dynamic && !sr.join.expanded {
				r.expand(sr, false)
			} else {
				r.runJoin(sr)
			}
			again()
			continue
		}
		if r.holdItem(sr) {
			// max_parallel holds it back before anything is decided
			// for it: its condition, budget and gate are looked at
			// once it may start (as internal/model has it).
			let = nil
			continue
		}
		var whenErr error
		if sr.st.Status == StatusPending && sr.def.When != nil {
			run, err := r.evalWhen(sr)
			if err == nil && !run {
				r.skip(sr)
				again()
				continue
			}
			whenErr = err
		}
		if whenErr == nil && r.overBudget(sr) {
			again()
			continue
		}
		if whenErr == nil && r.atGate(sr) {
			again()
			continue
		}
		if q := r.request(sr); !r.fits(&q, head) {
			if head == nil {
				head = &q
			}
			// Those parked with the same request come after it: they
			// do not fit either, in what only shrinks until again.
			r.park(sr, q).failed = true
			continue
		}
		if whenErr != nil {
			r.startAttempt(sr) // it fails the attempt; no cache lookup
			continue
		}
		if r.probeCache(sr) {
			continue // mCacheProbed starts it, or settles it as cached
		}
		r.startAttempt(sr)
	}
}

func (r *Runner) handle(m msg) {
	sr := m.sr
	switch m.kind {
	case mStarted:
		if m.job != "" {
			sr.st.Job = m.job
			r.commit([]*StepState{sr.st}, Event{Type: EvStepSubmitted, StepID: sr.def.ID, Attempt: sr.st.Attempt, Data: &StepSubmitted{Job: m.job}})
			break
		}
		sr.st.PGID, sr.st.PStart = m.pgid, m.pstart
		r.commit([]*StepState{sr.st})
	case mAttemptDone:
		r.done(sr)
		r.attemptDone(sr, m.out)
	case mRecoveryDone:
		r.done(sr)
		r.recoveryDone(sr, m)
	case mRetryReady:
		r.done(sr)
		r.retryReady(sr)
	case mHandlerDone:
		r.done(sr)
		r.handlerDone(sr, m)
	case mLogFailed:
		r.halt(m.err)
	case mCacheProbed:
		r.done(sr)
		r.cacheProbed(sr, m)
	}
}

// work counts a worker goroutine that now acts for sr (its attempt,
// handler, recovery script, delay or cache probe); its report to the loop
// ends it (done). A step has at most one at a time.
func (r *Runner) work(sr *stepRun) {
	r.inflight++
	sr.busy = true
}

func (r *Runner) done(sr *stepRun) {
	r.inflight--
	sr.busy = false
}

func (r *Runner) takeSlot(sr *stepRun) {
	if !sr.slot {
		sr.slot = true
		r.running++
		r.reserve(sr)
		r.slotChanged(sr, true)
	}
}

func (r *Runner) freeSlot(sr *stepRun) {
	if sr.slot {
		sr.slot = false
		r.running--
		r.unreserve(sr)
		r.slotChanged(sr, false)
	}
}

// startAttempt records the step in_progress, then starts its process.
func (r *Runner) startAttempt(sr *stepRun) {
	st := sr.st
	// The condition is evaluated before every attempt (README
	// "Conditions"); within a session its answer does not change.
	run, whenErr := r.evalWhen(sr)
	if whenErr == nil && !run {
		r.freeSlot(sr) // a probe's slot
		r.skip(sr)
		return
	}
	// An attempt 1 of a step that never started has no result file left
	// from an earlier process: every start is committed before its
	// process runs, so a step whose record has no attempt ran none.
	fresh := st.Status != StatusRetrying && st.Attempt == 0
	if st.Status != StatusRetrying && !st.AttemptReserved {
		st.Attempt++
	}
	st.AttemptReserved = false
	now := r.now()
	st.Status = StatusInProgress
	st.StartedAt = timep(now)
	st.FinishedAt = nil
	st.ExitCode = nil
	st.Error = ""
	st.DurationMs = 0
	st.PGID, st.PStart, st.Job = 0, "", ""
	st.Hash = StepHash(r.Plan, sr.def)
	st.CacheKey, st.CachedFrom = "", nil
	st.Outputs = nil
	if r.budgets {
		r.addSpent(sr, Spent{Attempts: 1}) // committed with the start
	}
	if sr.def.PlanPath != "" && st.ChildRunID == "" {
		st.ChildRunID = r.NewRunID(sr.def.ChildName, now)
	}
	r.takeSlot(sr)
	ps, err := r.attemptSpec(sr)
	if err == nil && whenErr != nil {
		err = &WhenError{Step: sr.def.ID, Err: whenErr}
	}
	ps.freshResult = fresh
	if err == nil {
		r.passJoin(sr, &ps)
	}
	ctrl := newCtrl()
	// The attempt's log files are made while its start is committed (with
	// FABER_SYNC=1, while the device flushes): they are no action of the
	// step's, and the process itself starts only once the start is stored.
	// If the commit fails, the files stay empty and unrecorded; the attempt
	// runs again on resume, with the same number, and appends to them.
	var gate chan startGate
	if err == nil {
		gate = make(chan startGate, 1)
		r.gated.Add(1)
		made := sr.aheadMade
		go func() {
			// An item of an array pass that ends before its submission
			// (its start not stored, its logs not made) lets the
			// others' array go without it.
			defer ps.pass.arrive()
			if made != nil && ps.freshResult {
				// Its files are being made ahead (makeLogsAhead): they
				// are ready soon, or at once. Made here meanwhile, they
				// would cost as much, contend for the directory with the
				// maker, and leave its hidden files behind.
				<-made
			}
			logs := openLogs(ps)
			g := <-gate
			r.gated.Done()
			if !g.ok {
				logs.close()
				return
			}
			ahead := len(g.ahead) > 0
			if ahead {
				// Only once the process runs: run earlier, on this
				// goroutine's processor, the files would delay its start.
				ps.afterStart = func() {
					ahead = false
					go func() {
						defer r.ahead.Done()
						makeLogsAhead(g.ahead)
					}()
				}
			}
			out := runAttempt(ps, ctrl, logs)
			if ahead {
				// The process did not start: nothing is made ahead.
				aheadDone(g.ahead)
				r.ahead.Done()
			}
			out.readOutputs(ps)
			r.hashOutputs(sr, &out)
			r.msgs <- msg{kind: mAttemptDone, sr: sr, out: out}
		}()
	}
	r.commit([]*StepState{st}, r.statusEvent(sr))
	if r.fatal != nil {
		if gate != nil {
			gate <- startGate{}
		}
		r.freeSlot(sr)
		return
	}
	sr.ctrl = ctrl
	r.work(sr)
	if err != nil {
		out := outcome{startErr: err, exitCode: 127, started: now, finished: now}
		if ue, we := (*UsesError)(nil), (*WhenError)(nil); errors.As(err, &ue) || errors.As(err, &we) {
			// An output it uses is missing, or its condition cannot be
			// evaluated: the attempt fails with no process and no exit
			// code, as a result file saying failure.
			out = outcome{noProcess: true, resultStatus: "failure", resultMessage: err.Error(), started: now, finished: now}
		}
		// Otherwise it cannot happen for a validated plan; recorded as a
		// failed attempt rather than losing the step.
		go func() { r.msgs <- msg{kind: mAttemptDone, sr: sr, out: out} }()
		return
	}
	g := startGate{ok: true, ahead: r.logDirsAhead(sr)}
	if len(g.ahead) > 0 {
		r.ahead.Add(1)
	}
	gate <- g
}

// reattach waits, in this session, for the batch job of the step's running
// attempt, which outlived the faber that submitted it, and records how it
// really ended: no new attempt starts. The attempt keeps its number, its
// start time (its timeout counts from it) and its log files.
func (r *Runner) reattach(sr *stepRun) {
	st := sr.st
	r.takeSlot(sr)
	ps, err := r.attemptSpec(sr)
	b, ok := ps.exec.(batchExecutor)
	_, id, _ := strings.Cut(st.Job, ":")
	if err == nil && (!ok || id == "") {
		err = fmt.Errorf("step %q: job %s: its executor does not re-attach to jobs", sr.def.ID, st.Job)
	}
	ctrl := newCtrl()
	sr.ctrl = ctrl
	r.work(sr)
	started := r.now()
	if st.StartedAt != nil {
		started = *st.StartedAt
	}
	ps.timeoutFrom = fromReattach
	go func() {
		o := outcome{exec: ps.exec, timeout: ps.timeout, lim: ps.lim, started: started}
		o.lim.timeout = ps.timeout
		if err != nil {
			o.startErr, o.exitCode = err, 127
		} else if logs, _ := openLogPair(ps.stdoutPath, ps.stderrPath); logs.fail != nil {
			// (Not openLogs: the result file stays, the job may have
			// written it.)
			o.startErr, o.logErr, o.exitCode = logs.fail, logs.fail, 127
		} else {
			o.finishBatch(ps, ctrl, b, id, logs.out, logs.err)
			logs.close()
		}
		o.finished = time.Now()
		o.readOutputs(ps)
		r.hashOutputs(sr, &o)
		r.msgs <- msg{kind: mAttemptDone, sr: sr, out: o}
	}()
}

// startGate lets an attempt's process start once its start is committed
// (ok), and names the log directories to make ahead once it runs.
type startGate struct {
	ok    bool
	ahead []aheadDir
}

// aheadDir is a log directory to make ahead (makeLogsAhead), and what is
// closed once it and its files are made, or will not be: its step's start
// waits for that before it opens its log files.
type aheadDir struct {
	dir  string
	made chan struct{}
}

// aheadDone says of each of dirs that nothing more is made for it.
func aheadDone(dirs []aheadDir) {
	for _, d := range dirs {
		close(d.made)
	}
}

// maxDirsAhead bounds the log directories made ahead for one step's start.
const maxDirsAhead = 8

// logDirsAhead picks the log directories to make ahead of the start of
// the dependents that sr's success would make ready (makeLogsAhead), and
// marks those steps so that each is picked once.
func (r *Runner) logDirsAhead(sr *stepRun) []aheadDir {
	var dirs []aheadDir
	for _, d := range sr.dependents {
		if len(dirs) == maxDirsAhead {
			break
		}
		if d.waiting != 1 || d.aheadMade != nil || d.join != nil || d.isEnd || d.st.Attempt > 0 {
			continue
		}
		d.aheadMade = make(chan struct{})
		dirs = append(dirs, aheadDir{dir: logDir(r.RunDir, d.def.ID), made: d.aheadMade})
	}
	return dirs
}

// makeLogsAhead makes, in the background while a step runs, the log
// directory of each dependent that the step's success would make ready
// (logDirsAhead), and in it the two empty files that become its attempt-1
// logs, under hidden names (aheadName): on a file system where inodes
// churn (ext4 after many deletions) creating a file costs more than a no-op
// step (0.1-0.5 ms each), and on a chain it would otherwise sit between one
// step's end and the next one's start, three times; openLogs renames them
// into place, which allocates nothing. A step that then does not run keeps
// an empty directory (dropAhead removes its files). A step whose files are
// still being made when it starts waits for them (aheadDir.made): making
// its own meanwhile costs as much and leaves the hidden ones behind.
func makeLogsAhead(dirs []aheadDir) {
	for _, d := range dirs {
		makeLogAhead(d.dir)
		close(d.made)
	}
}

// slowAhead, set by tests, runs before each directory is made ahead.
var slowAhead func()

func makeLogAhead(dir string) {
	if slowAhead != nil {
		slowAhead()
	}
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	for _, stream := range [...]string{"out", "err"} {
		if !aheadFiles {
			break
		}
		if f, err := os.OpenFile(aheadName(filepath.Join(dir, "attempt-1."+stream)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			f.Close()
		}
	}
}

// aheadName is the name a log file made ahead has until its attempt starts:
// ".ahead-" before its own name, in its directory.
func aheadName(path string) string {
	return filepath.Join(filepath.Dir(path), ".ahead-"+filepath.Base(path))
}

// dropAhead removes, once the session's last process ended, the log files
// made ahead for steps that did not start.
func (r *Runner) dropAhead() {
	r.ahead.Wait()
	for _, sr := range r.steps {
		if aheadFiles && sr.aheadMade != nil && sr.st.Attempt == 0 {
			for _, stream := range [...]string{"out", "err"} {
				_ = os.Remove(aheadName(LogPath(r.RunDir, sr.def.ID, "attempt", 1, stream)))
			}
		}
	}
}

func (r *Runner) attemptDone(sr *stepRun, out outcome) {
	st := sr.st
	st.FinishedAt = timep(out.finished)
	if st.StartedAt != nil {
		st.DurationMs = out.finished.Sub(*st.StartedAt).Milliseconds()
	}
	st.ExitCode = intp(out.exitCode)
	if out.noProcess {
		st.ExitCode = nil
	}
	st.PGID, st.PStart, st.Job = 0, "", ""
	if out.stoppedBy == "" {
		// What a process faber stopped wrote is not trusted (README
		// "Budgets"): it was stopped before it could report.
		r.addSpent(sr, out.spent)
	}
	if sr.def.PlanPath == "" && sr.def.FanOut == nil {
		sr.ended = attemptEnd(st.Attempt, &out)
		st.Attempts = append(st.Attempts, sr.ended)
	}
	if out.spentBad != "" {
		// Stored with the attempt's end, which is committed next.
		r.commitLater(nil, Event{Type: EvWarning, StepID: st.ID, Attempt: st.Attempt,
			Data: &Warning{Message: fmt.Sprintf("step %q attempt %d: $FABER_RESULT: %s; not counted", st.ID, st.Attempt, out.spentBad)}})
	}
	if err := r.stateProblem(sr, "attempt", out); err != nil {
		// Whatever the process did, this attempt does not count: it is
		// interrupted, as by a crash of faber, and runs again on resume.
		r.halt(err)
		r.freeSlot(sr)
		st.Status = StatusInterrupted
		st.Error = "interrupted: " + err.Error()
		r.commit([]*StepState{st}, r.statusEvent(sr))
		return
	}
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
		st.Error = cancelError
		r.commit([]*StepState{st}, r.statusEvent(sr))
		return
	case !out.failed():
		r.freeSlot(sr)
		st.Status = StatusSuccess
		st.Error = ""
		st.Outputs = out.outputs
		if sr.cache.probe == nil {
			// Stored with the next commit (the start of a dependent),
			// before any process starts: see commitLater.
			r.commitLater([]*StepState{st}, r.statusEvent(sr))
		} else {
			// A cached step's entry names the event of its success: that
			// is committed now, then the entry written (storeEntry).
			var evs []Event
			if w := r.cacheSuccess(sr, out); w != nil {
				evs = append(evs, *w)
			}
			evs = append(evs, r.statusEvent(sr))
			r.commit([]*StepState{st}, evs...)
			r.storeEntry(sr)
		}
		sr.ctrl = nil // done: nothing will stop it (a 100,000-step run keeps no controls)
		r.release(sr)
		return
	}
	st.Error = out.errorText()
	r.dropEntry(sr)
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
		if sr.group == d {
			continue // a join counts its items as they settle (itemChanged)
		}
		d.waiting--
		if d.st.Status == StatusPending && (d.join == nil && d.waiting == 0 || d.join != nil && !joinWaits(d)) {
			r.push(d)
		}
	}
}

// interrupt terminates everything running (SIGTERM, or SIGKILL when hard).
func (r *Runner) interrupt(hard bool) {
	r.intr = true
	r.stopWork()
	r.hard = r.hard || hard
	for _, sr := range r.all() {
		if sr.ctrl != nil {
			sr.ctrl.Stop(reasonInterrupt, hard)
		}
		if sr.st.Status == StatusRetrying && !sr.inFlight() {
			// A reserved retry waiting for a job slot (queued, or held
			// by max_parallel): nothing runs for it.
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
			if d.st.Status == StatusPendingFailed || d.st.Status == StatusAwaitingApproval || (d.st.Status == StatusPending && visit(d)) {
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
		if sr.join != nil && joinReady(sr) {
			changed = append(changed, sr.st)
			evs = append(evs, r.decideJoin(sr))
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
		if satisfied(d) {
			continue // a failure under on_failure: continue lets it run
		}
		if Status(d.st.Status).Failed() || d.st.Status == StatusCanceled {
			return fmt.Sprintf("upstream step %q is %s", d.def.ID, d.st.Status)
		}
	}
	return "the run stopped"
}
