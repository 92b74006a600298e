package exec

import (
	"reflect"
	"slices"
	"time"

	"github.com/faber-run/faber/spec"
)

// StepInfo is the static description of a step carried by run_started and
// run_resumed events, so that readers can show a run without its plan.
type StepInfo struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Phase string   `json:"phase"`
	Needs []string `json:"needs"`
	// FanOut is the fan-out step an item step <id>[<key>] belongs to.
	FanOut string `json:"fan_out,omitempty"`
}

// View is a run as rebuilt from its event log: what `faber status` shows.
type View struct {
	Run   RunState
	Steps []*StepState // plan order, the end step last
	// Owner fields are filled in by the caller.
	LastSeq int64
}

// Replay rebuilds a run's state from its events, oldest first. It is how
// processes other than the owner read a run: the event log is complete, so
// they never need the owner's store.
func Replay(events [][]byte) (*View, error) {
	p := NewReplayer()
	for _, line := range events {
		if err := p.Read(line); err != nil {
			return nil, err
		}
	}
	return p.View(), nil
}

// Read takes in the next event of the log, as its JSON line.
func (p *Replayer) Read(line []byte) error {
	var e Event
	if err := e.UnmarshalJSON(line); err != nil {
		return err
	}
	p.apply(&e)
	return nil
}

// Replayer is Replay taken one event at a time: the run's owner keeps one
// current with its commits (Committed), so that the view it leaves for
// readers when it closes the run is the one a replay of its log gives,
// without a replay.
type Replayer struct {
	run     RunState
	lastSeq int64
	byID    map[string]*StepState
	// order is every step of byID, in the order Replay keeps them; the
	// view moves the end step last, order does not (see EndAt).
	order []string
}

// NewReplayer returns a Replayer that has seen no event.
func NewReplayer() *Replayer {
	return &Replayer{byID: map[string]*StepState{}}
}

// ReplayerOf continues from a view that a Replayer gave (View), with its
// end step at endAt of its order (EndAt). The view's steps become the
// Replayer's: the caller leaves them alone.
func ReplayerOf(v *View, endAt int) *Replayer {
	p := &Replayer{run: v.Run, lastSeq: v.LastSeq, byID: make(map[string]*StepState, len(v.Steps)), order: make([]string, 0, len(v.Steps))}
	for _, st := range v.Steps {
		p.byID[st.ID] = st
		p.order = append(p.order, st.ID)
	}
	if i := len(p.order) - 1; endAt >= 0 && endAt < i && p.order[i] == "end" {
		p.order = slices.Insert(p.order[:i], endAt, "end")
	}
	return p
}

// LastSeq is the seq of the last event taken in.
func (p *Replayer) LastSeq() int64 { return p.lastSeq }

// EndAt is where the end step is in the Replayer's order (-1: none), which
// ReplayerOf needs besides the view.
func (p *Replayer) EndAt() int { return slices.Index(p.order, "end") }

// View returns the run as the events so far give it. Its steps are the
// Replayer's own, valid until the next event.
func (p *Replayer) View() *View {
	v := &View{Run: p.run, LastSeq: p.lastSeq}
	if len(p.order) > 0 {
		v.Steps = make([]*StepState, 0, len(p.order))
	}
	for _, id := range p.order {
		v.Steps = append(v.Steps, p.byID[id])
	}
	// The end step always comes last.
	for i, st := range v.Steps {
		if st.ID == "end" && i != len(v.Steps)-1 {
			v.Steps = append(append(v.Steps[:i:i], v.Steps[i+1:]...), st)
			break
		}
	}
	return v
}

// Committed takes in events as their owner committed them, before any JSON
// round trip: each is first made what reading its JSON back would give
// (normalized), so that the view is the one Replay gives from the log.
func (p *Replayer) Committed(evs []Event) {
	for i := range evs {
		e := normalized(&evs[i])
		p.apply(&e)
	}
}

func (p *Replayer) get(id string) *StepState {
	st := p.byID[id]
	if st == nil {
		st = &StepState{ID: id, Name: id, Status: StatusPending, Needs: []string{}}
		p.byID[id] = st
		p.order = append(p.order, id)
	}
	return st
}

func (p *Replayer) setSteps(infos []StepInfo) {
	if infos == nil {
		return
	}
	newOrder := make([]string, 0, len(infos))
	seen := make(map[string]bool, len(infos))
	for _, in := range infos {
		st := p.get(in.ID)
		st.Name, st.Phase, st.FanOut = in.Name, in.Phase, in.FanOut
		st.Needs = in.Needs
		if st.Needs == nil {
			st.Needs = []string{}
		}
		newOrder = append(newOrder, in.ID)
		seen[in.ID] = true
	}
	for _, id := range p.order { // steps known only from events (e.g. "end")
		if !seen[id] {
			newOrder = append(newOrder, id)
		}
	}
	p.order = newOrder
}

// apply takes in one event, as read from the log.
func (p *Replayer) apply(e *Event) {
	p.lastSeq = e.Seq
	byID, v := p.byID, p
	switch d := e.Data.(type) {
	case *RunStarted:
		v.run.RunID = e.RunID
		v.run.StartedAt = e.Time
		v.run.Status = RunInProgress
		v.run.Plan = d.Plan
		p.setSteps(d.Steps)
	case *RunResumed:
		v.run.Status = RunInProgress
		v.run.FinishedAt = nil
		p.setSteps(d.Steps)
	case *FanOutExpanded:
		// The fan-out's items are these now, right before its join
		// step; the ones it no longer has leave the view.
		for _, id := range d.Removed {
			delete(byID, id)
		}
		now := make(map[string]bool, len(d.Items))
		for _, in := range d.Items {
			now[in.ID] = true
		}
		newOrder := make([]string, 0, len(p.order)+len(d.Items))
		for _, id := range p.order {
			st := byID[id]
			if st == nil || (st.FanOut == e.StepID && !now[id]) || now[id] {
				continue
			}
			if id == e.StepID {
				for _, in := range d.Items {
					newOrder = append(newOrder, in.ID)
				}
			}
			newOrder = append(newOrder, id)
		}
		p.order = newOrder
		for _, in := range d.Items {
			st := byID[in.ID]
			if st == nil {
				st = &StepState{ID: in.ID, Status: StatusPending}
				byID[in.ID] = st
			}
			st.Name, st.Phase, st.FanOut, st.Needs = in.Name, in.Phase, in.FanOut, nonNil(in.Needs)
		}
		if st := byID[e.StepID]; st != nil && d.Needs != nil {
			st.Needs = d.Needs
		}
	case *StepStatus:
		st := p.get(e.StepID)
		st.Status = e.Status
		st.Attempt = e.Attempt
		st.Job = "" // a job is announced after its attempt's start
		if d.Phase != "" {
			st.Phase = d.Phase
		}
		st.Error = d.Error
		st.CacheKey = d.CacheKey
		st.Outputs = d.Outputs
		if e.Status != StatusCached {
			st.CachedFrom = nil
		}
		if d.ChildRunID != "" {
			st.ChildRunID = d.ChildRunID
		}
		st.ExitCode = e.ExitCode
		st.StartedAt, st.FinishedAt = d.StartedAt, d.FinishedAt
		st.DurationMs = 0
		if d.DurationMs != nil {
			st.DurationMs = *d.DurationMs
		}
		if d.AttemptEnd != nil {
			st.Attempts = append(st.Attempts, d.AttemptEnd)
		}
		if d.Spent != nil {
			st.Spent = copySpent(d.Spent)
		}
		if e.Status != StatusPending {
			st.BudgetWaived = false // the start it was for came
		}
		if e.Status == StatusAwaitingApproval {
			p.joinGate(st)
		}
		if e.Status == StatusInProgress || d.AttemptEnd != nil && d.AttemptEnd.Cause == spec.CauseRejected {
			// A decision recorded for later is applied.
			for _, g := range []*Gate{st.Gate, st.PhaseGate} {
				if g != nil {
					g.Recorded = false
				}
			}
		}
		if d.Reason == "reset" {
			st.Gate, st.PhaseGate = nil, nil // its gates ask again
		}
	case *HandlerInvoked:
		t := e.Time
		p.get(e.StepID).Remediation = &Remediation{
			HandlerType:      d.HandlerType,
			HandlerCommand:   d.HandlerCommand,
			HandlerInvokedAt: &t,
			HandlerResult:    d.HandlerResult,
			RetryCount:       d.RetryCount,
			MaxRetries:       d.MaxRetries,
		}
	case *ApprovalRequested:
		st := p.get(e.StepID)
		at := d.OpenedAt
		g := &Gate{State: GateOpen, Prompt: d.Prompt, OpenedAt: &at, Deadline: d.Deadline}
		if d.Phase != "" {
			st.PhaseGate = g
		} else {
			st.Gate = g
			if st.PhaseGate != nil {
				st.PhaseGate.Recorded = false // passed: its own gate asks now
			}
		}
	case *StepApproved:
		p.decided(e, d.Phase, d.Steps, GateApproved, d.Note, d.By, d.Recorded)
	case *StepRejected:
		p.decided(e, d.Phase, d.Steps, GateRejected, d.Reason, d.By, d.Recorded)
	case *CacheHit:
		p.get(e.StepID).CachedFrom = &CachedFrom{RunID: d.CachedRunID, Attempt: d.CachedAttempt, Seq: d.CachedSeq}
	case *StepSubmitted:
		p.get(e.StepID).Job = d.Job
	case *StepReattached:
		p.get(e.StepID).Job = d.Job
	case *StepClassified:
		p.get(e.StepID).Classified = d.Action
		if d.Action == ClassifiedRetry {
			p.get(e.StepID).BudgetWaived = true
		}
		setLimits(p.get(e.StepID), d.MemoryBytes, d.TimeoutMs)
	case *RetryReserved:
		setLimits(p.get(e.StepID), d.MemoryBytes, d.TimeoutMs)
	case *AgentSpent:
		if v.run.Spent == nil {
			v.run.Spent = &Spent{}
		} else {
			v.run.Spent = copySpent(v.run.Spent) // a view handed out keeps its own
		}
		v.run.Spent.add(Spent{CostUSD: d.CostUSD, Turns: d.Turns, Tokens: d.Tokens})
	case *WorkflowEnded:
		v.run.Status = e.Status
		if v.run.Status == "" {
			v.run.Status = RunFailed
			if e.Type == EvWorkflowCompleted {
				v.run.Status = RunSuccess
			}
		}
		t := e.Time
		v.run.FinishedAt = &t
	}
}

// setLimits records a step's next-attempt limits from an event; zero keeps
// what the step had.
func setLimits(st *StepState, memory, timeoutMs int64) {
	if memory == 0 && timeoutMs == 0 {
		return
	}
	if st.Limits == nil {
		st.Limits = &Limits{}
	}
	if memory > 0 {
		st.Limits.MemoryBytes = memory
	}
	if timeoutMs > 0 {
		st.Limits.TimeoutMs = timeoutMs
	}
}

// normalized is e as reading its JSON back gives it, as far as Replayer
// reads it: no monotonic reading in times, the event's in UTC, strings valid UTF-8
// (JSON makes each other byte U+FFFD), a missing payload the empty one of
// its type, and nothing shared with the committer, who may change its own
// afterwards. An event of a kind it does not know that well (a payload of
// another type than its Type's, a child's event, an unknown type) takes
// the JSON round trip itself.
func normalized(e *Event) Event {
	want := newPayload(e.Type)
	if e.Data == nil {
		e2 := *e
		e2.Data = want
		if want == nil {
			return roundTrip(e)
		}
		e = &e2
	}
	if want == nil || reflect.TypeOf(want) != reflect.TypeOf(e.Data) || e.ParentRunID != "" || e.ParentStepID != "" || e.Line != nil || e.Child != nil {
		return roundTrip(e)
	}
	n := Event{Seq: e.Seq, Time: normTime(e.Time), Type: e.Type, RunID: validUTF8(e.RunID), StepID: validUTF8(e.StepID),
		Attempt: e.Attempt, Status: validUTF8(e.Status), ExitCode: copyInt(e.ExitCode)}
	switch d := e.Data.(type) {
	case *RunStarted:
		n.Data = &RunStarted{Plan: validUTF8(d.Plan), Steps: normInfos(d.Steps)}
	case *RunResumed:
		n.Data = &RunResumed{Steps: normInfos(d.Steps)}
	case *FanOutExpanded:
		n.Data = &FanOutExpanded{Removed: normStrings(d.Removed), Items: normInfos(d.Items), Needs: normStrings(d.Needs)}
	case *StepStatus:
		c := &StepStatus{Phase: validUTF8(d.Phase), Error: validUTF8(d.Error), CacheKey: validUTF8(d.CacheKey),
			ChildRunID: validUTF8(d.ChildRunID), StartedAt: normTimep(d.StartedAt), FinishedAt: normTimep(d.FinishedAt)}
		if d.DurationMs != nil {
			ms := *d.DurationMs
			c.DurationMs = &ms
		}
		// Keys are ASCII; a value reads back byte-exact (Output's JSON).
		c.Outputs = slices.Clone(d.Outputs)
		if a := d.AttemptEnd; a != nil {
			c.AttemptEnd = &AttemptEnd{Attempt: a.Attempt, Cause: validUTF8(a.Cause), ExitCode: copyInt(a.ExitCode), Spent: copySpent(a.Spent)}
			if r := a.Resources; r != nil {
				rc := *r
				rc.Source = validUTF8(r.Source)
				c.AttemptEnd.Resources = &rc
			}
		}
		c.Spent = copySpent(d.Spent)
		n.Data = c
	case *HandlerInvoked:
		c := &HandlerInvoked{HandlerType: validUTF8(d.HandlerType), HandlerCommand: validUTF8(d.HandlerCommand),
			RetryCount: d.RetryCount, MaxRetries: d.MaxRetries}
		if r := d.HandlerResult; r != nil {
			c.HandlerResult = &HandlerResult{Status: validUTF8(r.Status), Message: validUTF8(r.Message), ExitCode: r.ExitCode, ActionTaken: validUTF8(r.ActionTaken), Spent: copySpent(r.Spent)}
		}
		n.Data = c
	case *CacheHit:
		n.Data = &CacheHit{CachedRunID: validUTF8(d.CachedRunID), CachedAttempt: d.CachedAttempt, CachedSeq: d.CachedSeq}
	case *StepClassified:
		n.Data = &StepClassified{Action: validUTF8(d.Action), MemoryBytes: d.MemoryBytes, TimeoutMs: d.TimeoutMs}
	case *RetryReserved:
		n.Data = &RetryReserved{MemoryBytes: d.MemoryBytes, TimeoutMs: d.TimeoutMs}
	case *StepSubmitted:
		n.Data = &StepSubmitted{Job: validUTF8(d.Job)}
	case *StepReattached:
		n.Data = &StepReattached{Job: validUTF8(d.Job), Message: validUTF8(d.Message)}
	case *ApprovalRequested:
		n.Data = &ApprovalRequested{Prompt: validUTF8(d.Prompt), Phase: validUTF8(d.Phase), OpenedAt: normTime(d.OpenedAt), Deadline: normTimep(d.Deadline)}
	case *StepApproved:
		n.Data = &StepApproved{By: validUTF8(d.By), Note: validUTF8(d.Note), Phase: validUTF8(d.Phase), Recorded: d.Recorded, Steps: normStrings(d.Steps)}
	case *StepRejected:
		n.Data = &StepRejected{By: validUTF8(d.By), Reason: validUTF8(d.Reason), Phase: validUTF8(d.Phase), Recorded: d.Recorded, Steps: normStrings(d.Steps)}
	case *AgentSpent:
		c := *d
		n.Data = &c
	default:
		n.Data = e.Data // a payload Replayer does not read
	}
	return n
}

// decided records a gate's decision on the steps it applies to.
func (p *Replayer) decided(e *Event, phase string, steps []string, state, note, by string, recorded bool) {
	if len(steps) == 0 {
		steps = []string{e.StepID}
	}
	for _, id := range steps {
		st := p.get(id)
		rec := &st.Gate
		if phase != "" {
			rec = &st.PhaseGate
		}
		g := &Gate{State: state, Note: note, By: by, Recorded: recorded}
		if old := *rec; old != nil {
			g.Prompt, g.OpenedAt, g.Deadline = old.Prompt, old.OpenedAt, old.Deadline
		}
		*rec = g
	}
}

// joinGate gives a step that came to an open gate of several (its phase's,
// its fan-out's) that gate, as another step's approval_requested opened it.
func (p *Replayer) joinGate(st *StepState) {
	open := func(g *Gate) bool { return g != nil && g.State == GateOpen }
	if open(st.Gate) || open(st.PhaseGate) {
		return
	}
	for _, id := range p.order {
		o := p.byID[id]
		switch {
		case o == nil || o == st:
		case open(o.PhaseGate) && o.Phase == st.Phase:
			g := *o.PhaseGate
			st.PhaseGate = &g
			return
		case open(o.Gate) && st.FanOut != "" && o.FanOut == st.FanOut:
			g := *o.Gate
			st.Gate = &g
			return
		}
	}
}

// roundTrip is e read back from its JSON; an event that does not marshal
// is one Replay would not have read: it is left out (a zero event, whose
// seq still counts).
func roundTrip(e *Event) Event {
	b := e.JSON
	if b == nil {
		var err error
		if b, err = e.MarshalJSON(); err != nil {
			return Event{Seq: e.Seq}
		}
	}
	var out Event
	if err := out.UnmarshalJSON(b); err != nil {
		return Event{Seq: e.Seq}
	}
	return out
}

func normTime(t time.Time) time.Time { return t.UTC().Round(0) }

// normTimep is a payload's time read back from its JSON, which keeps its
// zone's offset.
func normTimep(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := jsonTime(*t)
	return &u
}

// jsonTime is t as its JSON reads back (MarshalJSON, then UnmarshalJSON),
// without writing it: an offset of 0 ("Z") reads as UTC, the local zone's
// offset at that instant as Local, any other as a fixed zone, and no
// monotonic reading. A time JSON cannot write (a year outside 0–9999, an
// offset of 24 hours or more or with seconds) is normTime's.
// TestJSONTimeIsRoundTrip holds it to the round trip.
func jsonTime(t time.Time) time.Time {
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		var u time.Time
		if b, err := t.MarshalJSON(); err != nil || u.UnmarshalJSON(b) != nil {
			return normTime(t)
		}
		return u
	}
	switch l := t.In(time.Local); {
	case off == 0:
		return t.UTC()
	case zoneOffset(l) == off:
		return l
	default:
		return t.In(time.FixedZone("", off))
	}
}

// zoneOffset is the offset of t's zone at t, in seconds east of UTC.
func zoneOffset(t time.Time) int {
	_, off := t.Zone()
	return off
}

func copyInt(p *int) *int {
	if p == nil {
		return nil
	}
	n := *p
	return &n
}

func normStrings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = validUTF8(s)
	}
	return out
}

func normInfos(in []StepInfo) []StepInfo {
	if in == nil {
		return nil
	}
	out := make([]StepInfo, len(in))
	for i, s := range in {
		out[i] = StepInfo{ID: validUTF8(s.ID), Name: validUTF8(s.Name), Phase: validUTF8(s.Phase), Needs: normStrings(s.Needs), FanOut: validUTF8(s.FanOut)}
	}
	return out
}

// validUTF8 is s as JSON carries it: each byte that is not UTF-8 U+FFFD.
func validUTF8(s string) string { return toValidUTF8(s) }
