package exec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

func envHasBrace(env map[string]string) bool {
	for _, v := range env {
		if strings.ContainsAny(v, "{}") {
			return true
		}
	}
	return false
}

// StepHash is the step definition hash of SPEC §10: it covers `run` after
// substitution of context values (built-ins such as {attempt} stay as
// written, so that they do not make every attempt "changed"), env, dir,
// shell, timeout and needs.
func StepHash(p *spec.Plan, s *spec.Step) string {
	// The variables are only needed by a template with a brace (Expand
	// returns any other as it is); a fan-out's items often have none.
	var vars map[string]string
	if strings.ContainsAny(s.Run, "{}") || envHasBrace(s.Env) {
		vars = make(map[string]string, len(p.Context)+10)
		for _, b := range spec.Builtins(true) {
			vars[b] = "{" + b + "}"
		}
		for k, v := range p.Context {
			vars[k] = v
		}
		if s.Item != nil {
			for k, v := range s.Item.Vars() {
				vars[k] = v
			}
		}
	}
	run, err := subst.Expand(s.Run, vars)
	if err != nil {
		run = s.Run
	}
	env := map[string]string{}
	for k, v := range s.Env {
		if x, err := subst.Expand(v, vars); err == nil {
			v = x
		}
		env[k] = v
	}
	shell := s.Shell
	if shell == "" {
		shell = p.Shell
	}
	deps := append([]string{}, s.Deps...)
	if s.Join && s.FanOut != nil && s.FanOut.Dynamic {
		// Its items are read when it runs; a change of them re-opens the
		// join by itself (README "Fan-out"), not as a changed definition.
		deps = append([]string{}, s.FanOut.Needs...)
	}
	sort.Strings(deps)
	b, _ := json.Marshal(struct {
		Run     string            `json:"run"`
		Env     map[string]string `json:"env"`
		Dir     string            `json:"dir"`
		Shell   string            `json:"shell"`
		Timeout int64             `json:"timeout"`
		Needs   []string          `json:"needs"`
	}{run, env, s.Dir, shell, int64(s.Timeout), deps})
	// The engine's settings count only for an engine other than this
	// machine, so that hashes of local steps stay what they were before
	// there were engines (an explicit `executor: local` is no change).
	b = withDefinition(b, s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// ResumeOptions are the choices of `faber resume`.
type ResumeOptions struct {
	RetryPending bool // pending_failed steps go back to pending too
	EditedPlan   bool // the plan differs from the stored one: compare hashes
	// Reattach are running steps whose batch job outlived the dead owner
	// (EndLeftovers): they stay in_progress, and the session waits for
	// their job instead of starting a new attempt.
	Reattach map[string]bool
}

// ResumeError names steps the plan to resume with no longer has although
// they already ran. Edited says the plan is an edited one (resume --plan);
// otherwise it is the run's stored plan, which only a change of faber
// itself could make lose a step (a dynamic fan-out's items that go are no
// such step: they leave the run, README "Fan-out").
type ResumeError struct {
	Steps  []string
	Edited bool
}

func (e *ResumeError) Error() string {
	what := plural(len(e.Steps), "step", "steps")
	if !e.Edited {
		return fmt.Sprintf("the run's stored plan no longer has %s that already ran: %s (start a new run)", what, strings.Join(e.Steps, ", "))
	}
	return fmt.Sprintf("the edited plan drops %s that already ran: %s (put them back, or start a new run)", what, strings.Join(e.Steps, ", "))
}

// PrepareResume turns the records of a stopped run into the starting state of
// a new session (SPEC §8): success is kept; failure, remediation_failed,
// canceled and interrupted go back to pending (attempt numbers continue),
// except steps failed by classification and the dependents they canceled;
// pending_failed stays unless classified retry or opts.RetryPending. Steps
// that were running when the owner died (in_progress, remediating,
// retrying) must have been made safe by the caller (orphans killed) and are
// recorded as interrupted with a step_orphaned event, then re-run. With an
// edited plan, steps whose definition changed re-run with their downstream.
//
// It updates prior in place and stores the events to commit in prior.Events.
func PrepareResume(p *spec.Plan, prior *Prior, opts ResumeOptions) error {
	inPlan := map[string]bool{}
	for _, s := range p.Steps {
		inPlan[s.ID] = true
	}
	if p.End != nil {
		inPlan[p.End.ID] = true
	}
	var dropped []string
	for id, st := range prior.Steps {
		if !inPlan[id] {
			if dynamicItem(p, st) {
				// An item its fan-out no longer has (its items are read
				// when it runs): kept aside, in case it comes back.
				if prior.Gone == nil {
					prior.Gone = map[string]*StepState{}
				}
				prior.Gone[id] = st
			} else if st.Attempt > 0 && id != "end" {
				dropped = append(dropped, id)
			}
			delete(prior.Steps, id)
		}
	}
	if len(dropped) > 0 {
		sort.Strings(dropped)
		return &ResumeError{Steps: dropped, Edited: opts.EditedPlan}
	}

	var evs []Event
	changed := map[string]*StepState{}
	set := func(st *StepState, status, note string) {
		st.Status = status
		changed[st.ID] = st
		evs = append(evs, statusOnly(st, note))
	}
	order := append([]*spec.Step{}, p.Steps...)
	if p.End != nil {
		order = append(order, p.End)
	}

	// 1. Orphans: steps that were running when faber died, but those whose
	// batch job outlived it.
	var orphaned, reattached []string
	for _, s := range order {
		st := prior.Steps[s.ID]
		if st == nil {
			continue
		}
		if opts.Reattach[st.ID] && st.Status == StatusInProgress && st.Job != "" {
			evs = append(evs, Event{Type: EvStepReattached, StepID: st.ID, Attempt: st.Attempt, Data: &StepReattached{
				Job:     st.Job,
				Message: "faber stopped while the step's job ran on; this session waits for the job",
			}})
			reattached = append(reattached, st.ID)
			continue
		}
		if Status(st.Status).Active() {
			was := st.Status
			evs = append(evs, Event{Type: EvStepOrphaned, StepID: st.ID, Attempt: st.Attempt, Data: &StepOrphaned{
				PreviousStatus: was,
				PGID:           st.PGID,
				Message:        "faber stopped while the step was " + was + "; its processes were terminated",
			}})
			st.PGID, st.PStart = 0, ""
			st.Error = "interrupted: faber stopped while the step was " + was
			set(st, StatusInterrupted, "")
			orphaned = append(orphaned, st.ID)
		}
	}

	// 2. Edited plan: changed definitions re-run with their downstream.
	var rerun []string
	if opts.EditedPlan {
		var changedIDs []string
		for _, s := range p.Steps {
			st := prior.Steps[s.ID]
			if st != nil && st.Hash != "" && st.Hash != StepHash(p, s) {
				changedIDs = append(changedIDs, s.ID)
			}
		}
		if len(changedIDs) > 0 {
			for _, id := range p.Downstream(changedIDs...) {
				st := prior.Steps[id]
				if st == nil || st.Status == StatusPending {
					continue
				}
				st.Classified = ""
				st.Error = ""
				set(st, StatusPending, "definition changed")
				rerun = append(rerun, id)
			}
		}
	}

	// 3. Failed steps go back to pending.
	for _, s := range order {
		st := prior.Steps[s.ID]
		if st == nil {
			continue
		}
		switch {
		case Status(st.Status).Resumable():
			if st.Classified == ClassifiedFail || st.Classified == ClassifiedFailDependent {
				continue
			}
			set(st, StatusPending, "")
		case st.Status == StatusPendingFailed:
			// A sub-plan step waits on its child run, which holds the real
			// decision: resuming the step resumes the child (SPEC §9).
			if st.Classified == ClassifiedRetry || opts.RetryPending || WaitsOnChild(st) {
				set(st, StatusPending, "")
			}
		}
	}
	ids := make([]string, 0, len(changed))
	for _, s := range order {
		if st, ok := changed[s.ID]; ok {
			prior.Changed = append(prior.Changed, st)
			ids = append(ids, s.ID)
		}
	}
	prior.Events = append([]Event{{Type: EvRunResumed, Data: &RunResumed{
		Plan:         p.Name,
		Steps:        StepInfos(p),
		ResetSteps:   nonNil(ids),
		Orphaned:     nonNil(orphaned),
		Reattached:   reattached,
		ChangedSteps: nonNil(rerun),
		EditedPlan:   opts.EditedPlan,
	}}}, evs...)
	return nil
}

// Classification marks on a step record.
const (
	ClassifiedRetry         = "retry"
	ClassifiedFail          = "fail"
	ClassifiedFailDependent = "fail-dependent" // canceled because a classified-failed step upstream
)

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Runnable reports whether a prepared run has anything left to do.
func Runnable(prior *Prior) bool {
	for _, st := range prior.Steps {
		if st.Status == StatusPending {
			return true
		}
	}
	return false
}

// ResetSteps puts steps of a finished run back to pending (`faber reset`,
// SPEC §10): with failedOnly, failure, remediation_failed, canceled and
// pending_failed steps and their non-success downstream; with ids, those steps
// and all their downstream; with neither, every step. It returns the changed
// records and the events to commit.
func ResetSteps(p *spec.Plan, prior *Prior, failedOnly bool, ids []string) ([]*StepState, []Event, error) {
	var targets []string
	// Items that left a dynamic fan-out unfinished (Expansion.Unfinished)
	// are forgotten by a reset that names them, their fan-out, failed
	// steps or every step: gone, they have nothing to run, and their join
	// is decided again without them. forgot are the joins that changed.
	forgot := map[string]bool{}
	forget := func(join *spec.Step, id string) bool {
		st := prior.Steps[join.ID]
		if st == nil || st.Expanded == nil {
			return false
		}
		var keep []string
		for _, x := range st.Expanded.Unfinished {
			if id != "" && x != id {
				keep = append(keep, x)
			}
		}
		if len(keep) == len(st.Expanded.Unfinished) {
			return false
		}
		st.Expanded.Unfinished = keep
		forgot[join.ID] = true
		return true
	}
	dynamicJoins := func() []*spec.Step {
		var out []*spec.Step
		for _, s := range p.Steps {
			if s.Join && s.FanOut != nil && s.FanOut.Dynamic {
				out = append(out, s)
			}
		}
		return out
	}
	switch {
	case len(ids) > 0:
		var roots []string
	next:
		for _, id := range ids {
			s := p.Step(id)
			if s == nil {
				for _, j := range dynamicJoins() {
					if forget(j, id) {
						roots = append(roots, j.ID)
						continue next
					}
				}
				return nil, nil, fmt.Errorf("the plan has no step %q", id)
			}
			roots = append(roots, id)
			if s.Join && s.FanOut != nil {
				roots = append(roots, s.FanOut.ItemIDs...) // a fan-out step is its items too
				if s.FanOut.Dynamic {
					forget(s, "")
				}
			}
		}
		targets = p.Downstream(roots...)
	case failedOnly:
		var roots []string
		for _, j := range dynamicJoins() {
			forget(j, "")
		}
		for _, s := range p.Steps {
			if st := prior.Steps[s.ID]; st != nil {
				// SPEC §10: failure, remediation_failed, pending_failed
				// and canceled steps.
				if Status(st.Status).Failed() || st.Status == StatusCanceled {
					roots = append(roots, s.ID)
				}
			}
		}
		for _, id := range p.Downstream(roots...) {
			if st := prior.Steps[id]; st != nil && !Status(st.Status).Succeeded() {
				targets = append(targets, id)
			}
		}
	default:
		for _, j := range dynamicJoins() {
			forget(j, "")
		}
		for _, s := range p.Steps {
			targets = append(targets, s.ID)
		}
	}
	var changed []*StepState
	var evs []Event
	for _, id := range targets {
		st := prior.Steps[id]
		if st == nil || (st.Status == StatusPending && st.Classified == "" && st.Gate == nil && st.PhaseGate == nil && !forgot[id]) {
			continue
		}
		st.Status = StatusPending
		st.Classified = ""
		st.Error = ""
		st.Gate, st.PhaseGate = nil, nil // its gates ask again
		changed = append(changed, st)
		evs = append(evs, statusOnly(st, "reset"))
	}
	ev := Event{Type: EvStepsReset, Data: &StepsReset{Steps: nonNil(stepIDs(changed)), FailedOnly: failedOnly, Requested: nonNil(ids)}}
	return changed, append([]Event{ev}, evs...), nil
}

func stepIDs(sts []*StepState) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = st.ID
	}
	return out
}
