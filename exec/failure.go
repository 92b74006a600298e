package exec

import (
	"fmt"
	"strings"
	"time"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

// The failure pipeline: exit-code rules with recovery scripts and delays
// (SPEC §5), then on_failure handlers (SPEC §4).

// failure is the failure pipeline (SPEC §4, §5): exit-code rules first, then
// on_failure. It is entered for every failed attempt that faber did not stop
// itself.
func (r *Runner) failure(sr *stepRun, out outcome) {
	st, def := sr.st, sr.def
	sr.failed, sr.failedN = &out, st.Attempt
	// A failure when a budget of the step is spent (README "Budgets") has
	// cause budget: no rule retries it, no handler runs.
	budget := out.cause == spec.CauseBudget
	if why := r.budgetCheck(sr); why != "" && !budget {
		budget = true
		st.Error = budgetError(why, st.Error)
		out.cause = spec.CauseBudget
		if sr.ended != nil {
			sr.ended.Cause = spec.CauseBudget
		}
	}
	matched := false
	if def.FailureHandler != "" {
		fh := r.Plan.FailureHandlers[def.FailureHandler]
		rule := MatchRuleCause(fh, out.exitCode, out.resultStatus == "failure" && out.exitCode == 0, out.stderrTail, attemptCause(&out))
		if out.cause == spec.CauseRejected || budget {
			// A rejection is no exit code, nor a spent budget: only
			// on: [rejected] (on: [budget]) matches it.
			rule = matchOnly(fh, out.cause)
		}
		if rule != nil {
			matched = true
			if !budget && sr.ruleUsed[rule.Index] < rule.MaxRetries {
				if r.canceling(sr) {
					r.cancelLate(sr, fmt.Sprintf("its retry under failure handler %q (rule %d)", fh.Name, rule.Index+1))
					return
				}
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
	kind := of.Kind
	if budget && kind != spec.OnContinue {
		kind = spec.OnStop // no retry, no handler
	}
	switch kind {
	case spec.OnContinue:
		r.freeSlot(sr)
		st.Status = StatusFailure
		sr.continued = true
		r.commit([]*StepState{st}, r.statusEvent(sr), Event{Type: EvWarning, StepID: def.ID, Attempt: st.Attempt,
			Data: &Warning{Message: fmt.Sprintf("step %q failed (%s); on_failure: continue, dependents run anyway", def.ID, st.Error)}})
		r.release(sr)
	case spec.OnRetry:
		if sr.onFailUsed < of.MaxRetries && !r.intr {
			if r.canceling(sr) {
				r.cancelLate(sr, "its on_failure retry")
				return
			}
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
		if r.canceling(sr) {
			r.cancelLate(sr, fmt.Sprintf("its on_failure handler %s", firstWord(of.Command)))
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
// --fail-fast) every active step is canceled: its attempt, handler,
// recovery script or delay is terminated (the step becomes canceled when
// its worker reports back), and a reserved retry that waits for a job slot
// is canceled at once.
func (r *Runner) stop() {
	if r.stopping {
		return
	}
	r.stopping = true
	// Steps at a gate would start once decided: like pending steps, they
	// do not after a stop (README "Approval gates").
	r.cancelGates()
	if !r.cancel {
		return
	}
	for _, sr := range r.steps {
		switch {
		case !Status(sr.st.Status).Active():
		case sr.inFlight():
			sr.ctrl.Stop(reasonCancel, false)
		default:
			// Retrying, and waiting for a slot (queued, or held by
			// max_parallel): nothing runs for it.
			r.endRetry(sr, StatusCanceled, cancelError)
		}
	}
}

// cancelError is the error of a step a cancel stop canceled.
const cancelError = "stopped: another step failed (stop_mode: cancel)"

// canceling reports whether a cancel stop (stop_mode: cancel, --fail-fast)
// forbids the step new work: after it no recovery script, handler or
// attempt starts, except the end step's, which runs after every stop
// (SPEC §7).
func (r *Runner) canceling(sr *stepRun) bool {
	return r.stopping && r.cancel && !sr.isEnd
}

// cancelLate ends a step whose failure reached the pipeline after a cancel
// stop (its process ended on its own just before the stop) when the
// pipeline would start more work for it (what): it is canceled, as that
// work would have been had the failure come a moment earlier, and a
// warning records what did not run and why.
func (r *Runner) cancelLate(sr *stepRun, what string) {
	st := sr.st
	r.freeSlot(sr)
	msg := fmt.Sprintf("step %q failed (%s) after the run stopped (stop_mode: cancel): %s does not run", st.ID, st.Error, what)
	st.Status = StatusCanceled
	st.Error = cancelError
	r.commit([]*StepState{st}, Event{Type: EvWarning, StepID: st.ID, Attempt: st.Attempt, Data: &Warning{Message: msg}}, r.statusEvent(sr))
}

// inFlight reports whether a worker acts for the step (a process, a delay,
// a cache probe): its report to the loop is still to come.
func (sr *stepRun) inFlight() bool { return sr.busy }

// reserveRetry reserves the retry in one commit (status retrying, attempt+1,
// step_retry_reserved), then runs the recovery script, then waits the delay.
func (r *Runner) reserveRetry(sr *stepRun, fh *spec.FailureHandler, rule *spec.Rule, out outcome) {
	st := sr.st
	if sr.ruleUsed == nil {
		sr.ruleUsed = map[int]int{}
	}
	sr.ruleUsed[rule.Index]++
	k := sr.ruleUsed[rule.Index]
	delay := RetryDelay(rule, k)
	failedN := st.Attempt
	r.freeSlot(sr)
	st.Status = StatusRetrying
	st.Attempt++
	d := &RetryReserved{
		FailureHandler: fh.Name,
		Rule:           rule.Index,
		RetryCount:     k,
		MaxRetries:     rule.MaxRetries,
		FailedAttempt:  failedN,
		DelayMs:        delay.Milliseconds(),
		Error:          st.Error,
		FailedExitCode: out.exitCode,
	}
	next, _ := grow(rule, out.lim)
	if c := r.Capacity.Memory; c > 0 && next.memory > c && next.memory != out.lim.memory && sr.def.Local() {
		// Grown past the run's capacity: it could never be reserved (a
		// batch scheduler's step reserves no memory here).
		next.memory = max(c, out.lim.memory)
		d.MemoryCapped = true
	}
	if next != out.lim {
		// The retry runs with more: recorded on the step (resume keeps it)
		// and in the event.
		if next.memory != out.lim.memory {
			d.MemoryBytes = next.memory
		}
		if next.timeout != out.lim.timeout {
			d.TimeoutMs = next.timeout.Milliseconds()
		}
		setLimits(st, d.MemoryBytes, d.TimeoutMs)
	}
	r.commit([]*StepState{st}, r.statusEvent(sr), Event{Type: EvRetryReserved, StepID: st.ID, Attempt: st.Attempt, Data: d})
	if r.fatal != nil {
		return
	}
	sr.ctrl = newCtrl()
	ctrl := sr.ctrl
	r.work(sr)
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
		if err := r.stateProblem(sr, "recovery", m.out); err != nil {
			r.halt(err) // retryStopped below ends the retry interrupted
		}
		d := &RecoveryFinished{FailedAttempt: sr.failedN}
		switch {
		case m.err != nil:
			d.Error = m.err.Error()
		case m.out.exitCode != 0:
			d.Error = m.out.errorText()
		}
		ev := Event{Type: EvRecoveryFinished, StepID: st.ID, Attempt: sr.failedN, ExitCode: intp(m.out.exitCode), Data: d}
		r.commit(nil, ev)
	}
	if r.retryStopped(sr) {
		return
	}
	if delay <= 0 {
		r.retryReady(sr)
		return
	}
	r.work(sr)
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
		r.endRetry(sr, StatusCanceled, cancelError)
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
	var argv []string
	err := r.addUsesIn(vars, of.Templates()...)
	if err == nil {
		argv, _, err = r.Plan.ResolveCommand(of.Command, args, vars)
	}
	st.Status = StatusRemediating
	ev := r.statusEvent(sr)
	if err == nil {
		ev.Data.(*StepStatus).HandlerCommand = subst.Join(argv)
	}
	r.commit([]*StepState{st}, ev)
	if r.fatal != nil {
		return
	}
	sr.ctrl = newCtrl()
	ctrl := sr.ctrl
	r.work(sr)
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
	if m.err == nil {
		if err := r.stateProblem(sr, "handler", out); err != nil {
			r.halt(err) // the step ends interrupted below
		}
		if out.stoppedBy == "" {
			r.addSpent(sr, out.spent) // as for attempts (attemptDone)
		}
	}
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
	if !out.spent.IsZero() {
		sp := out.spent
		res.Spent = &sp
	}
	reason := sr.ctrl.Reason()
	retry := ok && of.RetryOnSuccess && sr.remRetries < of.MaxRetries && reason == "" && !r.intr && !r.canceling(sr)
	if why := r.budgetCheck(sr); retry && why != "" {
		// The handler's success would re-run the step: not once a budget
		// is spent (README "Budgets").
		retry = false
		st.Error = budgetError(why, st.Error)
	}
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
	hev := Event{Type: EvHandlerInvoked, StepID: st.ID, Attempt: sr.failedN, Data: &HandlerInvoked{
		Phase:          st.Phase,
		OriginalStatus: StatusFailure,
		HandlerType:    m.hType,
		HandlerCommand: st.Remediation.HandlerCommand,
		HandlerArgv:    m.argv,
		HandlerResult:  res,
		RetryCount:     sr.remRetries,
		MaxRetries:     of.MaxRetries,
		Error:          st.Error,
	}}
	switch {
	case reason == reasonInterrupt || r.intr:
		r.freeSlot(sr)
		st.Status = StatusInterrupted
		r.commit([]*StepState{st}, hev, r.statusEvent(sr))
	case reason == reasonCancel || r.canceling(sr):
		r.freeSlot(sr)
		st.Status = StatusCanceled
		st.Error = cancelError
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

// MatchRule returns the rule of fh that handles a failure (SPEC §5): the first
// rule listing the exit code (and whose stderr_matches, if any, matches) wins
// wherever it stands; else the first matching catch-all. A failure reported
// only through the result file (exit code 0) matches catch-alls only.
func MatchRule(fh *spec.FailureHandler, code int, resultOnly bool, stderr []byte) *spec.Rule {
	return MatchRuleCause(fh, code, resultOnly, stderr, "")
}

// MatchRuleCause is MatchRule for an attempt that ended for cause (CauseOOM,
// CauseTimeout or ""): a rule whose on: lists the cause matches as one
// listing the exit code does, in rule order.
func MatchRuleCause(fh *spec.FailureHandler, code int, resultOnly bool, stderr []byte, cause string) *spec.Rule {
	if fh == nil {
		return nil
	}
	ok := func(rule *spec.Rule) bool {
		return rule.StderrMatches == nil || rule.StderrMatches.Match(stderr)
	}
	if !resultOnly {
		for _, rule := range fh.Rules {
			if ruleMatchesCause(rule, cause) && ok(rule) {
				return rule
			}
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

// matchOnly is the first rule of fh whose on: lists cause (rejected,
// budget): such a failure matches no exit code and no catch-all.
func matchOnly(fh *spec.FailureHandler, cause string) *spec.Rule {
	for _, rule := range fh.Rules {
		if ruleMatchesCause(rule, cause) {
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
