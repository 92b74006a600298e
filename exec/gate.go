package exec

import (
	"fmt"
	"sort"
	"time"

	"github.com/faber-run/faber/spec"
)

// Approval gates (README "Approval gates"): a step with approval: (or an
// entry step of a phase with approval:, or an item of a fan-out with
// approval:) whose needs are met and whose condition holds does not start:
// it becomes awaiting_approval, holding no job slot, until the gate is
// decided — faber approve / reject (over Control), its timeout, or a
// decision recorded in the store while no session ran. A phase's gate and
// a fan-out's are one gate for all the steps they hold (their key).

// gateRef is one gate a step passes before it starts.
type gateRef struct {
	key   string // "phase:<name>", or the step's id (its fan-out's for an item)
	phase string // the phase, for a phase's gate
	a     *spec.Approval
	rec   **Gate // the step record's field for it
}

// openGate is a gate open in this session and the steps it holds.
type openGate struct {
	ref     gateRef
	gate    Gate // its prompt and times, shared by every step it holds
	members []*stepRun
}

// GateError is a decision that cannot apply (the step is not awaiting
// approval); the CLI exits 2.
type GateError struct{ Msg string }

func (e *GateError) Error() string { return e.Msg }

func phaseKey(name string) string { return "phase:" + name }

// gatesOf lists the gates sr passes before it starts, the phase's first.
func (r *Runner) gatesOf(sr *stepRun) []gateRef {
	def, st := sr.def, sr.st
	var out []gateRef
	if def.PhaseGate {
		if a := r.phaseApproval(def.Phase); a != nil {
			out = append(out, gateRef{key: phaseKey(def.Phase), phase: def.Phase, a: a, rec: &st.PhaseGate})
		}
	}
	if def.Approval != nil {
		key := def.ID
		if def.FanOutOf != "" {
			key = def.FanOutOf
		}
		out = append(out, gateRef{key: key, a: def.Approval, rec: &st.Gate})
	}
	return out
}

func (r *Runner) phaseApproval(name string) *spec.Approval {
	if ph := r.Plan.PhaseNamed(name); ph != nil {
		return ph.Approval
	}
	return nil
}

// atGate reports whether sr, about to start, stops at a gate: it opens one
// (the step becomes awaiting_approval), or applies a rejection decided
// before it got there. A gate approved in this run lets it through.
func (r *Runner) atGate(sr *stepRun) bool {
	if sr.isEnd || sr.join != nil {
		return false
	}
	for _, g := range r.gatesOf(sr) {
		rec := *g.rec
		switch {
		case rec != nil && rec.State == GateApproved:
			rec.Recorded = false
			continue
		case rec != nil && rec.State == GateRejected && rec.Recorded:
			rec.Recorded = false
			// A retry that comes to a rejection decided before it got
			// there (its fan-out's or phase's gate) took its attempt
			// number already: the rejection is that attempt.
			sr.st.AttemptReserved = sr.st.AttemptReserved || sr.st.Status == StatusRetrying
			r.rejectStep(sr, rec.Note)
			return true
		}
		if r.stopping {
			// A reserved retry that comes to its gate after a stop (drain):
			// like a pending step, it does not start.
			sr.st.AttemptReserved = sr.st.AttemptReserved || sr.st.Status == StatusRetrying
			*g.rec = &Gate{State: GateOpen, Prompt: g.a.Prompt}
			sr.st.Status = StatusCanceled
			sr.st.Error = "the run stopped"
			r.commit([]*StepState{sr.st}, r.statusEvent(sr))
			return true
		}
		r.open(sr, g, rec)
		return true
	}
	return false
}

// open makes sr wait at gate g: it joins the gate if it is open in this
// session, else opens it (approval_requested). A gate left open by an
// earlier session keeps its times: its timeout counts from when it first
// opened. A gate opened again after a rejection is a new request.
func (r *Runner) open(sr *stepRun, g gateRef, rec *Gate) {
	st := sr.st
	var evs []Event
	og := r.gates[g.key]
	if og == nil {
		og = &openGate{ref: g, gate: Gate{State: GateOpen, Prompt: g.a.Prompt}}
		if rec != nil && rec.State == GateOpen && rec.OpenedAt != nil {
			og.gate.OpenedAt, og.gate.Deadline = rec.OpenedAt, rec.Deadline
		} else {
			now := r.now()
			og.gate.OpenedAt = &now
			if g.a.Timeout > 0 {
				og.gate.Deadline = timep(now.Add(g.a.Timeout))
			}
		}
		if r.gates == nil {
			r.gates = map[string]*openGate{}
		}
		r.gates[g.key] = og
		evs = append(evs, Event{Type: EvApprovalRequested, StepID: st.ID, Attempt: st.Attempt, Data: &ApprovalRequested{
			Prompt: g.a.Prompt, Phase: g.phase, OpenedAt: *og.gate.OpenedAt, Deadline: og.gate.Deadline}})
	}
	og.members = append(og.members, sr)
	gt := og.gate
	*g.rec = &gt
	st.AttemptReserved = st.AttemptReserved || st.Status == StatusRetrying
	st.Status = StatusAwaitingApproval
	st.Error = ""
	evs = append(evs, r.statusEvent(sr))
	r.commit([]*StepState{st}, evs...)
}

// GateReq is a decision on a gate: approve or reject (Approve false, Text
// the reason) the step Step, or, with Phase set or when no step is named
// Step, the phase's gate.
type GateReq struct {
	Step    string
	Phase   bool
	Approve bool
	Text    string // the note of an approval, the reason of a rejection
	By      string // cli, view, mcp, timeout
}

// decideReq applies a decision from another process (faber approve,
// reject, the live view, MCP) in the running session.
func (r *Runner) decideReq(req GateReq) error {
	key, err := r.gateKey(req)
	if err != nil {
		return err
	}
	r.decide(key, req.Approve, req.Text, req.By)
	return r.fatal
}

// gateKey finds the open gate a decision names: the step's (a step id wins
// over a phase of the same name), or the phase's.
func (r *Runner) gateKey(req GateReq) (string, error) {
	if sr := r.byID[req.Step]; sr != nil && !req.Phase {
		if sr.def.Join && sr.def.Approval != nil {
			// A fan-out's id names its one gate, which its items wait at.
			if r.gates[req.Step] == nil {
				return "", &GateError{fmt.Sprintf("fan-out %q's gate is not open: none of its items awaits approval", req.Step)}
			}
			return req.Step, nil
		}
		if sr.st.Status != StatusAwaitingApproval {
			return "", &GateError{fmt.Sprintf("step %q is %s, not awaiting_approval: only a step at an open gate can be approved or rejected", req.Step, sr.st.Status)}
		}
		for k, og := range r.gates {
			for _, m := range og.members {
				if m == sr {
					return k, nil
				}
			}
		}
		return "", &GateError{fmt.Sprintf("step %q has no open gate", req.Step)}
	}
	if r.phaseApproval(req.Step) == nil {
		return "", &GateError{fmt.Sprintf("the run has no step or gated phase %q", req.Step)}
	}
	k := phaseKey(req.Step)
	if r.gates[k] == nil {
		return "", &GateError{fmt.Sprintf("phase %q's gate is not open: none of its steps awaits approval", req.Step)}
	}
	return k, nil
}

// decide closes gate key with a decision: every step it holds goes on
// (approved: to its start) or fails (rejected: through its failure
// pipeline); the steps of a phase's or fan-out's gate that have not reached
// it yet keep the decision, recorded, for when they do.
func (r *Runner) decide(key string, approve bool, text, by string) {
	og := r.gates[key]
	if og == nil {
		return
	}
	delete(r.gates, key)
	g := og.ref
	gt := og.gate
	gt.By, gt.Note = by, text
	gt.State = GateRejected
	if approve {
		gt.State = GateApproved
	}
	var changed []*StepState
	var ids []string
	held := map[*stepRun]bool{}
	for _, m := range og.members {
		held[m] = true
		ids = append(ids, m.def.ID)
	}
	// The steps the gate holds that have not reached it: the decision
	// waits for them in their records.
	if g.phase != "" || og.members[0].def.FanOutOf == key {
		for _, sr := range r.steps {
			if held[sr] || sr.join != nil || !r.holds(sr, g) || Status(sr.st.Status).Succeeded() {
				continue
			}
			later := gt
			later.Recorded = true
			for _, ref := range r.gatesOf(sr) {
				if ref.key == key {
					*ref.rec = &later
				}
			}
			changed = append(changed, sr.st)
		}
	}
	first := og.members[0]
	var ev Event
	if approve {
		ev = Event{Type: EvStepApproved, StepID: first.def.ID, Attempt: first.st.Attempt, Data: &StepApproved{By: by, Note: text, Phase: g.phase, Steps: gateSteps(g, ids)}}
	} else {
		ev = Event{Type: EvStepRejected, StepID: first.def.ID, Attempt: first.st.Attempt, Data: &StepRejected{By: by, Reason: text, Phase: g.phase, Steps: gateSteps(g, ids)}}
	}
	evs := []Event{ev}
	for _, m := range og.members {
		for _, ref := range r.gatesOf(m) {
			if ref.key == key {
				d := gt
				*ref.rec = &d
			}
		}
		if approve {
			m.st.Status = StatusPending
			if m.st.AttemptReserved {
				m.st.Status = StatusRetrying
			}
			changed = append(changed, m.st)
			evs = append(evs, statusOnly(m.st, "approved"))
		}
	}
	if approve {
		r.commit(changed, evs...)
		for _, m := range og.members {
			if r.fatal == nil && m.waiting == 0 {
				r.push(m)
			}
		}
		return
	}
	r.commit(changed, evs...)
	for _, m := range og.members {
		if r.fatal == nil {
			r.rejectStep(m, text)
		}
	}
}

// gateSteps is the steps field of a decision: only for a gate of several.
func gateSteps(g gateRef, ids []string) []string {
	if g.phase == "" && len(ids) == 1 && ids[0] == g.key {
		return nil
	}
	return ids
}

// holds reports whether gate g holds sr.
func (r *Runner) holds(sr *stepRun, g gateRef) bool {
	for _, ref := range r.gatesOf(sr) {
		if ref.key == g.key {
			return true
		}
	}
	return false
}

// rejectStep fails sr for a rejection: an attempt that ran no process,
// with no exit code and cause rejected, which goes through the failure
// pipeline like any failed attempt (exit-code rules match it only by on:
// [rejected]; then on_failure).
func (r *Runner) rejectStep(sr *stepRun, reason string) {
	st := sr.st
	if !st.AttemptReserved {
		st.Attempt++
	}
	msg := "rejected"
	if reason != "" {
		msg += ": " + reason
	}
	r.failNoProcess(sr, msg, spec.CauseRejected)
}

// failNoProcess ends sr's attempt (its number already taken) as one that
// ran no process, failed for cause with {error} msg: a rejection, a start
// a spent budget refused. Its failure goes through the pipeline.
func (r *Runner) failNoProcess(sr *stepRun, msg, cause string) {
	sr.st.AttemptReserved = false
	now := r.now()
	sr.st.StartedAt = timep(now)
	r.attemptDone(sr, outcome{noProcess: true, resultStatus: "failure", resultMessage: msg, cause: cause, started: now, finished: now})
}

// cancelGates cancels the steps at open gates when the run stops: like a
// pending step, a step at a gate does not start after a stop. Their gates
// stay open in their records: a resume asks again, from the same time.
func (r *Runner) cancelGates() {
	if len(r.gates) == 0 {
		return
	}
	var changed []*StepState
	var evs []Event
	for _, k := range r.gateKeys() {
		for _, m := range r.gates[k].members {
			m.st.Status = StatusCanceled
			m.st.Error = "the run stopped"
			changed = append(changed, m.st)
			evs = append(evs, r.statusEvent(m))
		}
		delete(r.gates, k)
	}
	r.commit(changed, evs...)
}

func (r *Runner) gateKeys() []string {
	ks := make([]string, 0, len(r.gates))
	for k := range r.gates {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// nextDeadline is the earliest deadline of the open gates, and whether
// there is one; gates do not time out once the run stops or is
// interrupted.
func (r *Runner) nextDeadline() (time.Time, bool) {
	var at time.Time
	ok := false
	if r.intr || r.fatal != nil || r.stopping {
		return at, false
	}
	for _, og := range r.gates {
		if d := og.gate.Deadline; d != nil && (!ok || d.Before(at)) {
			at, ok = *d, true
		}
	}
	return at, ok
}

// timeouts applies on_timeout to every open gate whose deadline passed.
func (r *Runner) timeouts() {
	now := r.now()
	for _, k := range r.gateKeys() {
		og := r.gates[k]
		if og == nil || og.gate.Deadline == nil || now.Before(*og.gate.Deadline) {
			continue
		}
		a := og.ref.a
		text := fmt.Sprintf("no decision within %s", a.Timeout)
		r.decide(k, a.OnTimeout == spec.ApproveDecision, text, "timeout")
	}
}

// DecideRecorded records a decision on a gate of a run with no live owner
// (faber approve / reject): the steps it holds keep their status and carry
// the decision, recorded, which the next session applies when they reach
// their gate (README "Approval gates"). It returns the changed records and
// the events to commit.
func DecideRecorded(p *spec.Plan, steps map[string]*StepState, req GateReq) ([]*StepState, []Event, error) {
	st := steps[req.Step]
	var members []*StepState
	phase := ""
	key := req.Step
	def := p.Step(req.Step)
	switch {
	case st != nil && def != nil && !req.Phase && def.Join && def.Approval != nil:
		// A fan-out's id names its one gate, which its items wait at:
		// the loop below finds them.
	case st != nil && def != nil && !req.Phase:
		if st.Status != StatusAwaitingApproval {
			return nil, nil, &GateError{fmt.Sprintf("step %q is %s, not awaiting_approval: only a step at an open gate can be approved or rejected", req.Step, st.Status)}
		}
		switch {
		case def.PhaseGate && st.PhaseGate != nil && st.PhaseGate.State == GateOpen:
			phase = def.Phase
		case def.FanOutOf != "":
			key = def.FanOutOf
		}
		if g := st.Gate; phase == "" && (g == nil || g.State != GateOpen) {
			return nil, nil, &GateError{fmt.Sprintf("step %q's gate is already decided (%s); the next resume applies it", req.Step, gateState(g))}
		}
	default:
		var ph *spec.Phase
		for _, x := range p.Phases {
			if x.Name == req.Step {
				ph = x
			}
		}
		if ph == nil || ph.Approval == nil {
			return nil, nil, &GateError{fmt.Sprintf("the run has no step or gated phase %q", req.Step)}
		}
		phase = ph.Name
	}
	open := false
	for _, def := range p.Steps {
		s := steps[def.ID]
		if s == nil || def.Join || Status(s.Status).Succeeded() {
			continue
		}
		rec := &s.Gate
		switch {
		case phase != "":
			if !def.PhaseGate || def.Phase != phase {
				continue
			}
			rec = &s.PhaseGate
		case def.ID != key && def.FanOutOf != key:
			continue
		case def.Approval == nil:
			continue
		}
		if *rec != nil && (*rec).State == GateOpen && s.Status == StatusAwaitingApproval {
			open = true
		}
		members = append(members, s)
	}
	if !open {
		what := fmt.Sprintf("step %q's gate", req.Step)
		if phase != "" {
			what = fmt.Sprintf("phase %q's gate", phase)
		}
		return nil, nil, &GateError{what + " is not open: none of its steps awaits approval"}
	}
	var ids []string
	for _, s := range members {
		rec := &s.Gate
		if phase != "" {
			rec = &s.PhaseGate
		}
		g := Gate{State: GateRejected, Note: req.Text, By: req.By, Recorded: true}
		if req.Approve {
			g.State = GateApproved
		}
		if old := *rec; old != nil {
			g.Prompt, g.OpenedAt, g.Deadline = old.Prompt, old.OpenedAt, old.Deadline
		}
		*rec = &g
		ids = append(ids, s.ID)
	}
	first := members[0]
	for _, s := range members {
		if s.Status == StatusAwaitingApproval {
			first = s
			break
		}
	}
	var list []string
	if phase != "" || len(ids) > 1 || ids[0] != req.Step {
		list = ids
	}
	ev := Event{Type: EvStepRejected, StepID: first.ID, Attempt: first.Attempt, Data: &StepRejected{By: req.By, Reason: req.Text, Phase: phase, Recorded: true, Steps: list}}
	if req.Approve {
		ev = Event{Type: EvStepApproved, StepID: first.ID, Attempt: first.Attempt, Data: &StepApproved{By: req.By, Note: req.Text, Phase: phase, Recorded: true, Steps: list}}
	}
	return members, []Event{ev}, nil
}

func gateState(g *Gate) string {
	if g == nil {
		return "none"
	}
	return g.State
}

// AwaitsGate reports whether a step waits at a gate whose decision is not
// taken yet: what faber pending lists as an approval.
func AwaitsGate(st *StepState) bool {
	if st.Status != StatusAwaitingApproval {
		return false
	}
	for _, g := range []*Gate{st.PhaseGate, st.Gate} {
		if g != nil && g.State == GateOpen {
			return true
		}
	}
	return false
}
