package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// Load builds the report of a run from what the state dir holds of it: its
// view (run.Load), its event log, its meta.json and its plan snapshot.
// version is the faber that makes the report. It also returns the damage of
// the run's store found on the way (nil if none).
func Load(stateDir, runID, version string) (*Report, *state.DamagedError, error) {
	v, meta, de, err := run.Load(stateDir, runID)
	if err != nil {
		return nil, de, err
	}
	log, err := state.ReadLog(stateDir, runID, 0)
	if err != nil {
		return nil, de, run.StoreError(err, runID, stateDir)
	}
	if de == nil {
		de = log.Damaged
	}
	plan, _ := state.ReadPlan(stateDir, runID) // a missing snapshot leaves the plan out
	var parsed *spec.Plan
	tried := false
	recovery := func(handler string, rule int) string {
		if !tried { // parsed only for a run that ran a recovery script
			tried = true
			parsed = run.StoredPlan(stateDir, runID, meta)
		}
		if parsed == nil {
			return ""
		}
		if fh := parsed.FailureHandlers[handler]; fh != nil {
			for _, r := range fh.Rules {
				if r.Index == rule {
					return r.RecoveryScript
				}
			}
		}
		return ""
	}
	r, err := Build(Input{Meta: meta, View: v, Events: log.Events, Plan: plan, Version: version, RecoveryScript: recovery,
		Budgets: run.Budgets(stateDir, runID, v)})
	return r, de, err
}

// Input is what a report is built from.
type Input struct {
	Meta    state.Meta
	View    *exec.View
	Events  [][]byte // the event log, one JSON object each, oldest first
	Plan    []byte   // plan.snapshot
	Version string
	// Now is when the report is made (zero: time.Now).
	Now time.Time
	// RecoveryScript, when set, is the recovery script of a failure
	// handler's rule, as the plan writes it ("" when unknown).
	RecoveryScript func(handler string, rule int) string
	// Budgets are the run's budget lines (run.Budgets); nil for none.
	Budgets []exec.BudgetLine
}

// stepLog is what the events tell of one step while they are read.
type stepLog struct {
	s         *Step
	open      *Attempt   // the attempt running, if any
	retryAt   *time.Time // when a retry was reserved, for its recovery and delay
	delay     time.Duration
	handlerAt *time.Time // when the handler started (remediating)
	decision  *Span      // a pending_failed decision not yet taken
	// retrySay is the trail's sentence of the retry reserved (-1: none),
	// which its recovery script completes; decided that something decided
	// on the next attempt (a rule, a handler, a classification).
	retrySay int
	decided  bool
	script   string // the recovery script of the retry reserved
}

// Build builds a report from its input.
func Build(in Input) (*Report, error) {
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	mask := exec.NewMaskerOf(in.Meta.Secrets)
	v := in.View
	r := &Report{
		FaberVersion: in.Version, GeneratedAt: now.UTC(),
		RunID: v.Run.RunID, Plan: v.Run.Plan, PlanFile: in.Meta.PlanFile, ParentRunID: in.Meta.ParentRunID,
		Status: v.Run.Status, StartedAt: v.Run.StartedAt, FinishedAt: v.Run.FinishedAt,
		Sets: []Set{}, PlanText: mask.String(string(in.Plan)), CriticalPath: []string{}, Counts: map[string]int{},
		Budgets: in.Budgets,
	}
	for k, val := range in.Meta.Sets {
		m := mask.String(val)
		r.Sets = append(r.Sets, Set{Name: k, Value: m, Masked: m != val})
	}
	sort.Slice(r.Sets, func(i, j int) bool { return r.Sets[i].Name < r.Sets[j].Name })

	logs := make(map[string]*stepLog, len(v.Steps))
	for _, st := range v.Steps {
		s := &Step{
			ID: st.ID, Name: st.Name, Phase: st.Phase, Status: st.Status, FanOut: st.FanOut,
			Needs: st.Needs, Error: st.Error, ChildRunID: st.ChildRunID, CachedFrom: st.CachedFrom,
			Attempts: []*Attempt{}, Spans: []*Span{}, Trail: []string{}, Spent: st.Spent,
		}
		if s.Needs == nil {
			s.Needs = []string{}
		}
		r.Steps = append(r.Steps, s)
		logs[st.ID] = &stepLog{s: s, retrySay: -1}
		r.Counts[st.Status]++
	}
	var last time.Time
	for _, line := range in.Events {
		var e exec.Event
		if err := e.UnmarshalJSON(line); err != nil {
			return nil, fmt.Errorf("run %s: event log unreadable: %w", r.RunID, err)
		}
		if e.Time.After(last) {
			last = e.Time
		}
		l := logs[e.StepID]
		if l == nil {
			continue
		}
		l.read(&e, &in, mask)
	}
	// What the log leaves open ends where the run ended, or where its log
	// ends while it runs.
	end := last
	if r.FinishedAt != nil && r.FinishedAt.After(end) {
		end = *r.FinishedAt
	}
	if end.IsZero() {
		end = r.StartedAt
	}
	for _, s := range r.Steps {
		s.span()
	}
	// A fan-out's step runs nothing itself: it spans its items.
	joins := map[string]*Step{}
	for _, s := range r.Steps {
		joins[s.ID] = s
	}
	for _, it := range r.Steps {
		j := joins[it.FanOut]
		if it.FanOut == "" || j == nil || len(j.Attempts) > 0 {
			continue
		}
		if it.StartedAt != nil && (j.StartedAt == nil || it.StartedAt.Before(*j.StartedAt)) {
			j.StartedAt = it.StartedAt
		}
		if it.FinishedAt != nil && (j.FinishedAt == nil || it.FinishedAt.After(*j.FinishedAt)) {
			j.FinishedAt = it.FinishedAt
		}
	}
	for _, s := range r.Steps {
		if s.FinishedAt == nil && s.StartedAt != nil && !exec.Status(s.Status).Active() && s.Status != exec.StatusPendingFailed {
			s.FinishedAt = s.StartedAt
		}
		if s.StartedAt != nil && s.FinishedAt != nil {
			s.DurationMs = s.FinishedAt.Sub(*s.StartedAt).Milliseconds()
		}
	}
	if r.FinishedAt != nil {
		r.DurationMs = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	} else {
		r.DurationMs = end.Sub(r.StartedAt).Milliseconds()
	}
	r.CriticalPath = criticalPath(r.Steps)
	return r, nil
}

// read takes in one event of the step.
func (l *stepLog) read(e *exec.Event, in *Input, mask *exec.Masker) {
	s := l.s
	t := e.Time
	switch d := e.Data.(type) {
	case *exec.StepStatus:
		if d.AttemptEnd != nil {
			l.endAttempt(d.AttemptEnd, e.Status, d.FinishedAt, t)
		}
		switch e.Status {
		case exec.StatusInProgress:
			l.closeDecision(t)
			if l.open != nil { // a new attempt without an end of the last
				l.open.FinishedAt = &t
				l.open = nil
			}
			if e.Attempt > 1 && !l.decided {
				s.Trail = append(s.Trail, fmt.Sprintf("its on_failure retried it as attempt %d", e.Attempt))
			}
			l.decided, l.retrySay = false, -1
			start := t
			if d.StartedAt != nil {
				start = *d.StartedAt
			}
			a := &Attempt{Attempt: e.Attempt, StartedAt: start, Reserved: d.Reserved, Retry: e.Attempt > 1}
			s.Attempts = append(s.Attempts, a)
			l.open = a
			if l.retryAt != nil && l.delay > 0 {
				from := *l.retryAt
				to := from.Add(l.delay)
				if to.After(start) {
					to = start
				}
				if to.After(from) {
					s.Spans = append(s.Spans, &Span{Kind: KindBackoff, Attempt: e.Attempt - 1, StartedAt: from, FinishedAt: &to,
						Text: "backoff wait " + l.delay.String()})
				}
			}
			l.retryAt, l.delay = nil, 0
		case exec.StatusRemediating:
			at := t
			if d.FinishedAt != nil {
				at = *d.FinishedAt
			}
			l.handlerAt = &at
		case exec.StatusPendingFailed:
			l.closeDecision(t)
			l.decision = &Span{Kind: KindDecision, Attempt: e.Attempt, StartedAt: t, Text: "waiting for a decision (faber classify)"}
			s.Spans = append(s.Spans, l.decision)
			s.Trail = append(s.Trail, fmt.Sprintf("attempt %d was left pending_failed, awaiting a decision", e.Attempt))
		case exec.StatusAwaitingApproval:
			l.closeDecision(t)
			l.decision = &Span{Kind: KindApproval, Attempt: e.Attempt, StartedAt: t, Text: "waiting for approval"}
			s.Spans = append(s.Spans, l.decision)
		case exec.StatusCached:
			l.closeDecision(t)
			s.Spans = append(s.Spans, &Span{Kind: KindCached, StartedAt: t, FinishedAt: &t, Text: "cached"})
			if s.CachedFrom != nil {
				s.Trail = append(s.Trail, fmt.Sprintf("cached: reuses run %s attempt %d, which exited 0", s.CachedFrom.RunID, s.CachedFrom.Attempt))
			} else {
				s.Trail = append(s.Trail, "cached")
			}
		case exec.StatusSkipped:
			s.SkippedWhen = d.When
			s.Spans = append(s.Spans, &Span{Kind: KindSkipped, StartedAt: t, FinishedAt: &t, Text: "skipped"})
			s.Trail = append(s.Trail, fmt.Sprintf("skipped: its condition (when: %s) was false", d.When))
		case exec.StatusPending:
			l.closeDecision(t)
			if d.Reason != "" && !strings.HasPrefix(d.Reason, "classified") {
				s.Trail = append(s.Trail, "put back to pending ("+d.Reason+")")
			}
		case exec.StatusFailure, exec.StatusRemediationFailed, exec.StatusCanceled, exec.StatusInterrupted:
			if d.AttemptEnd == nil {
				l.closeOpen(t, e.Status)
			}
			l.closeDecision(t)
			if e.Status != exec.StatusFailure || d.AttemptEnd == nil {
				s.Trail = append(s.Trail, "the step ended "+e.Status)
			}
		}
	case *exec.RetryReserved:
		at := t
		l.retryAt = &at
		l.delay = time.Duration(d.DelayMs) * time.Millisecond
		w := fmt.Sprintf("rule %d of failure handler '%s' retried it (retry %d of %d)", d.Rule+1, d.FailureHandler, d.RetryCount, d.MaxRetries)
		if d.DelayMs > 0 {
			w += " after a " + l.delay.String() + " backoff"
		}
		if d.MemoryBytes > 0 || d.TimeoutMs > 0 {
			w += " with " + limitsText(d.MemoryBytes, d.TimeoutMs)
			if d.MemoryCapped {
				w += " (memory capped to the run's capacity)"
			}
		}
		l.script = ""
		if in.RecoveryScript != nil {
			l.script = mask.String(in.RecoveryScript(d.FailureHandler, d.Rule))
		}
		l.retrySay, l.decided = len(s.Trail), true
		s.Trail = append(s.Trail, w)
	case *exec.RecoveryFinished:
		from := t
		if l.retryAt != nil {
			from = *l.retryAt
		}
		to := t
		text := "recovery script"
		if l.script != "" {
			text += " '" + shorten(run.FirstLine(l.script), 80) + "'"
		}
		switch {
		case d.Error != "":
			text += " failed: " + run.FirstLine(d.Error)
		case e.ExitCode != nil:
			text += fmt.Sprintf(" (exit %d)", *e.ExitCode)
		default:
			text += " succeeded"
		}
		s.Spans = append(s.Spans, &Span{Kind: KindRecovery, Attempt: d.FailedAttempt, StartedAt: from, FinishedAt: &to, Text: text})
		if i := l.retrySay; i >= 0 {
			w, delay, _ := strings.Cut(s.Trail[i], " after a ")
			w += " after " + text
			if delay != "" {
				w += ", then a " + delay
			}
			s.Trail[i] = w
		} else {
			s.Trail = append(s.Trail, text)
		}
		// the delay follows the recovery script
		l.retryAt = &to
	case *exec.HandlerInvoked:
		from := t
		if l.handlerAt != nil {
			from = *l.handlerAt
		}
		to := t
		text := fmt.Sprintf("handler %s", d.HandlerType)
		if d.HandlerCommand != "" {
			text += " " + d.HandlerCommand
		}
		w := text + " ran"
		if hr := d.HandlerResult; hr != nil {
			w += fmt.Sprintf(": %s (exit %d)", hr.Status, hr.ExitCode)
			if hr.ActionTaken != "" {
				w += ", then " + strings.ReplaceAll(hr.ActionTaken, "_", " ")
			}
		}
		s.Spans = append(s.Spans, &Span{Kind: KindHandler, Attempt: e.Attempt, StartedAt: from, FinishedAt: &to, Text: w})
		s.Trail = append(s.Trail, w)
		l.handlerAt, l.decided = nil, true
	case *exec.StepClassified:
		l.closeDecision(t)
		l.decided = true
		w := "classified " + d.Action
		if d.Reason != "" {
			w += " (" + d.Reason + ")"
		}
		if d.MemoryBytes > 0 || d.TimeoutMs > 0 {
			w += " with " + limitsText(d.MemoryBytes, d.TimeoutMs)
		}
		s.Trail = append(s.Trail, w)
	case *exec.ApprovalRequested:
		w := "asked for approval"
		if d.Prompt != "" {
			w += ": " + d.Prompt
		}
		if d.Phase != "" {
			w = "its phase " + d.Phase + " " + w
		}
		s.Trail = append(s.Trail, w)
	case *exec.StepApproved:
		l.closeDecision(t)
		w := "approved by " + d.By
		if d.Note != "" {
			w += " (" + d.Note + ")"
		}
		s.Trail = append(s.Trail, w)
	case *exec.StepRejected:
		l.closeDecision(t)
		s.Trail = append(s.Trail, "rejected by "+d.By+": "+d.Reason)
	case *exec.StepOrphaned:
		l.closeOpen(t, exec.StatusInterrupted)
		s.Trail = append(s.Trail, "its faber died while it ran (orphaned, found by resume)")
	}
}

// endAttempt closes the attempt an AttemptEnd ends.
func (l *stepLog) endAttempt(ae *exec.AttemptEnd, status string, fin *time.Time, t time.Time) {
	s := l.s
	var a *Attempt
	if l.open != nil && l.open.Attempt == ae.Attempt {
		a = l.open
	} else {
		a = &Attempt{Attempt: ae.Attempt, StartedAt: t, Retry: ae.Attempt > 1}
		s.Attempts = append(s.Attempts, a)
	}
	l.open = nil
	end := t
	if fin != nil {
		end = *fin
	}
	a.FinishedAt = &end
	a.Status = status
	a.ExitCode = ae.ExitCode
	a.Cause = ae.Cause
	a.Resources = ae.Resources
	a.Spent = ae.Spent
	w := "attempt " + strconv.Itoa(ae.Attempt) + " " + attemptWhat(ae, status)
	if ae.Spent != nil {
		w += ", spent " + ae.Spent.Text()
	}
	s.Trail = append(s.Trail, w)
}

// closeOpen ends the running attempt without an AttemptEnd.
func (l *stepLog) closeOpen(t time.Time, status string) {
	if l.open != nil {
		l.open.FinishedAt = &t
		l.open.Status = status
		l.open = nil
	}
}

func (l *stepLog) closeDecision(t time.Time) {
	if l.decision != nil {
		l.decision.FinishedAt = &t
		l.decision = nil
	}
}

// span sets the step's start and finish from its attempts and spans.
func (s *Step) span() {
	var start, fin *time.Time
	take := func(a time.Time, b *time.Time) {
		if start == nil || a.Before(*start) {
			t := a
			start = &t
		}
		if b != nil && (fin == nil || b.After(*fin)) {
			t := *b
			fin = &t
		}
	}
	for _, a := range s.Attempts {
		take(a.StartedAt, a.FinishedAt)
	}
	for _, sp := range s.Spans {
		take(sp.StartedAt, sp.FinishedAt)
	}
	s.StartedAt, s.FinishedAt = start, fin
}

func limitsText(mem, timeoutMs int64) string {
	var parts []string
	if mem > 0 {
		parts = append(parts, "memory "+spec.FormatSize(mem))
	}
	if timeoutMs > 0 {
		parts = append(parts, "timeout "+(time.Duration(timeoutMs)*time.Millisecond).String())
	}
	return strings.Join(parts, ", ")
}

// criticalPath is the chain of needs that ends at the last step to
// finish: from it, the need that finished last, and so on. The end step
// (phase "") needs every other step. A fan-out's join needs its items.
func criticalPath(steps []*Step) []string {
	byID := make(map[string]*Step, len(steps))
	items := map[string][]string{}
	var last *Step
	for _, s := range steps {
		byID[s.ID] = s
		if s.FanOut != "" {
			items[s.FanOut] = append(items[s.FanOut], s.ID)
		}
		if s.FinishedAt != nil && (last == nil || !s.FinishedAt.Before(*last.FinishedAt)) {
			last = s
		}
	}
	path := []string{}
	seen := map[string]bool{}
	for s := last; s != nil && !seen[s.ID]; {
		seen[s.ID] = true
		path = append(path, s.ID)
		s.Critical = true
		needs := s.Needs
		if s.Phase == "" && len(needs) == 0 {
			needs = nil
			for _, o := range steps {
				if o != s && o.FanOut == "" {
					needs = append(needs, o.ID)
				}
			}
		}
		if len(items[s.ID]) > 0 {
			needs = append(append([]string{}, needs...), items[s.ID]...)
		}
		var next *Step
		for _, id := range needs {
			n := byID[id]
			if n == nil || n.FinishedAt == nil || seen[id] {
				continue
			}
			if next == nil || n.FinishedAt.After(*next.FinishedAt) {
				next = n
			}
		}
		s = next
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// shorten cuts s to at most n runes, marked with "…".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// attemptWhat says how an attempt ended, for a step's trail: succeeded
// only when the status its end committed is a success (an exit 0 whose
// result file said failure is a failure), "ran no process" when it ran
// none (a rejection, a refused start, a value it needed missing).
func attemptWhat(ae *exec.AttemptEnd, status string) string {
	why := ""
	if ae.Cause != "" {
		why = " (" + ae.Cause + ")"
	}
	switch {
	case ae.ExitCode == nil:
		return "ran no process" + why
	case exec.Status(status).Succeeded() && *ae.ExitCode == 0 && ae.Cause == "":
		return "succeeded"
	case *ae.ExitCode == 0 && ae.Cause == "":
		return "exited 0 and failed"
	}
	return fmt.Sprintf("exited %d%s", *ae.ExitCode, why)
}
