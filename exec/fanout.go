package exec

import (
	"container/heap"
	"fmt"
	"strings"

	"github.com/faber-run/faber/spec"
)

// ItemCounts counts the items of one fan-out by how they stand: done
// (success or cached), skipped (their condition was false), running (in
// progress, remediating, retrying), pending, and failed (anything else:
// failure, remediation_failed, pending_failed, canceled, interrupted).
// faber status and the live view both show these.
type ItemCounts struct {
	Total, Done, Skipped, Failed, Running, Pending int
}

// Add counts n items (n < 0 takes them back) of a status.
func (c *ItemCounts) Add(status string, n int) {
	c.Total += n
	switch s := Status(status); {
	case s.Succeeded():
		c.Done += n
	case s == StatusSkipped:
		c.Skipped += n
	case s.Active():
		c.Running += n
	case s == StatusPending:
		c.Pending += n
	default:
		c.Failed += n
	}
}

// String is the counts as faber status shows them.
func (c ItemCounts) String() string {
	s := fmt.Sprintf("%d items: %d done", c.Total, c.Done)
	if c.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", c.Skipped)
	}
	if c.Failed > 0 {
		s += fmt.Sprintf(", %d failed", c.Failed)
	}
	if c.Running > 0 {
		s += fmt.Sprintf(", %d running", c.Running)
	}
	if c.Pending > 0 {
		s += fmt.Sprintf(", %d pending", c.Pending)
	}
	return s
}

// Fan-out (README, "Fan-out"): the item steps <id>[<key>] of a foreach: or
// matrix: step run as any step; the join step <id> runs no process. It is
// settled once every item is (success, failure, canceled, interrupted ... but
// not pending_failed, which waits for a decision): success when every item
// succeeded, else failure naming the failed items. max_parallel bounds how
// many items hold a job slot at once.

// joinRun is the scheduler's view of a fan-out on its join step. The join
// step's own waiting counts the fan-out step's needs (FanOut.Needs) that
// are not satisfied; the join is decided once that and waiting are 0.
//
// A fan-out over glob: or lines: (dynamic) reads its items once in each
// session, when its needs are satisfied (at setup if they already are):
// until then none of its items starts, and then the join is decided once
// they settle (expand).
type joinRun struct {
	items   []*stepRun
	waiting int // items not settled
	maxPar  int
	running int       // items holding a job slot
	held    readyHeap // ready items waiting for max_parallel, in plan order
	// pass is the array pass (batch_array.go) of the items that started
	// together while none was in flight, on an engine that throttles
	// arrays; nil when none.
	pass     *arrayPass
	dynamic  bool
	expanded bool // dynamic: its items were read in this session
}

// EvFanOutExpanded is the event of a fan-out over glob: or lines: that
// read its items (FanOutExpanded).
const EvFanOutExpanded = "fanout_expanded"

// Expansion is, on a dynamic fan-out's join step record, the item values it
// was last expanded to: a later session (resume, reset, classify) makes
// them the plan's item steps again (ApplyExpansions) before anything else.
type Expansion struct {
	Values []string `json:"values"`
	// Unfinished are the items that left the run (their file or line
	// went away) without having succeeded: the join fails while any is
	// here. One that comes back is an item again; faber reset forgets
	// one (README "Fan-out", "Items that change").
	Unfinished []string `json:"unfinished,omitempty"`
}

// unfinished reports whether an item that leaves the run leaves it
// without a success: it ran, and its last attempt did not succeed (or it
// was put back to pending to run again, by a resume or a reset).
func unfinished(st *StepState) bool {
	return st.Attempt > 0 && !Status(st.Status).Succeeded()
}

// ApplyExpansions gives the dynamic fan-outs of p the items their join
// step records say they were expanded to, so that a stored run's plan has
// the item steps it ran. Call it before FillPending and PrepareResume.
func ApplyExpansions(p *spec.Plan, prior *Prior) {
	var joins []*spec.Step
	for _, s := range p.Steps {
		if s.Join && s.FanOut != nil && s.FanOut.Dynamic {
			joins = append(joins, s)
		}
	}
	for _, s := range joins {
		if st := prior.Steps[s.ID]; st != nil && st.Expanded != nil {
			p.SetItems(s, st.Expanded.Values)
		}
	}
}

// dynamicItem reports whether a stored step record is an item of a dynamic
// fan-out of p (one it may no longer have: its items are read at run time).
func dynamicItem(p *spec.Plan, st *StepState) bool {
	if st.FanOut == "" {
		return false
	}
	s := p.Step(st.FanOut)
	return s != nil && s.Join && s.FanOut != nil && s.FanOut.Dynamic
}

// joinWaits reports whether a pending join step cannot be decided (or
// expanded) yet.
func joinWaits(j *stepRun) bool {
	if j.waiting > 0 {
		return true
	}
	if j.join.dynamic && !j.join.expanded {
		return false // ready to read its items
	}
	return j.join.waiting > 0
}

// expand reads the items of a dynamic fan-out whose needs are satisfied and
// makes them its items for this session: items that stay (same id and
// value) are kept as they are, new ones are pending (one that comes back,
// or whose key now has another value, continues its record's attempt
// numbers), vanished ones leave the run (their records stay in the store,
// r.gone). When the items changed, the join step and everything downstream
// of it go back to pending (those running are left to finish). The join's
// record (with the values), a fanout_expanded event and what it re-opened
// are committed before any item starts. At setup the caller counts
// dependencies afterwards; later, expand counts what it changed and
// pushes what is ready.
func (r *Runner) expand(j *stepRun, atSetup bool) {
	p := r.Plan
	fo := j.def.FanOut
	vars := r.vars(j, j.st.Attempt+1, nil)
	err := r.addUsesIn(vars, j.def.FanOut.Source) // foreach: {from: ...}
	var values []string
	if err == nil {
		values, err = p.ReadItems(j.def, vars)
	}
	if err != nil {
		r.expandFailed(j, err, atSetup)
		return
	}
	j.join.expanded = true
	before := j.join.items
	p.SetItems(j.def, values)

	var needs []*stepRun
	for _, id := range fo.Needs {
		if d := r.byID[id]; d != nil {
			needs = append(needs, d)
		}
	}
	var changed []*StepState
	var evs []Event
	reopen := func(sr *stepRun, why string) {
		st := sr.st
		st.Status, st.Error, st.Classified = StatusPending, "", ""
		changed = append(changed, st)
		evs = append(evs, statusOnly(st, why))
	}
	added, removed := []string{}, []string{}
	var left []string // items that leave the run unfinished now
	items := make([]*stepRun, len(fo.ItemIDs))
	var fresh []*stepRun
	for i, id := range fo.ItemIDs {
		def := p.Step(id)
		old := r.byID[id]
		if old != nil && old.def == def {
			items[i] = old
			continue
		}
		added = append(added, id)
		var st *StepState
		switch {
		case old != nil:
			st = old.st // the same key, another value
		case r.gone[id] != nil:
			st = r.gone[id] // back after it vanished
			delete(r.gone, id)
		default:
			st = PendingState(def)
		}
		sr := &stepRun{def: def, st: st, group: j, deps: needs, dependents: []*stepRun{j}}
		st.Name, st.Phase, st.FanOut = def.Name, def.Phase, def.FanOutOf
		st.Needs = append([]string{}, def.Deps...)
		if st.Status != StatusPending {
			reopen(sr, "new item of fan-out "+j.def.ID) // its record is of another item, or of before it vanished
		}
		r.byID[id] = sr
		items[i] = sr
		fresh = append(fresh, sr)
	}
	for _, it := range before {
		if r.byID[it.def.ID] == it && p.Step(it.def.ID) == it.def {
			continue // still an item
		}
		it.removed = true // gone, or replaced by an item of the same key
		if p.Step(it.def.ID) == nil {
			removed = append(removed, it.def.ID)
			if unfinished(it.st) {
				left = append(left, it.def.ID)
			}
			delete(r.byID, it.def.ID)
			if r.gone == nil {
				r.gone = map[string]*StepState{}
			}
			r.gone[it.def.ID] = it.st
		}
	}
	// Wire the new items to the fan-out's needs and to its join; recount.
	for _, d := range needs {
		deps := make([]*stepRun, 0, len(d.dependents)+len(fresh))
		for _, x := range d.dependents {
			if !x.removed {
				deps = append(deps, x)
			}
		}
		d.dependents = append(deps, fresh...)
	}
	j.deps = append(append(make([]*stepRun, 0, len(needs)+len(items)), needs...), items...)
	j.join.items = items
	j.join.waiting = 0
	for _, it := range items {
		it.counted = itemSettled(it.st.Status)
		if !it.counted {
			j.join.waiting++
		}
	}
	steps := make([]*stepRun, 0, len(p.Steps))
	for _, def := range p.Steps {
		steps = append(steps, r.byID[def.ID])
	}
	r.steps = steps
	if r.Grown != nil {
		r.Grown(len(steps))
	}

	// Other items: the join and what comes after it are decided again.
	var reopened []*stepRun
	if len(added) > 0 || len(removed) > 0 {
		for _, id := range p.Downstream(j.def.ID) {
			sr := r.byID[id]
			switch sr.st.Status {
			case StatusPending, StatusInProgress, StatusRemediating, StatusRetrying:
				continue
			}
			reopen(sr, "fan-out "+j.def.ID+" has other items")
			reopened = append(reopened, sr)
		}
	}
	// Unfinished: those of before that are still gone, and those that
	// leave now.
	var still []string
	if j.st.Expanded != nil {
		for _, id := range j.st.Expanded.Unfinished {
			if r.byID[id] == nil && !containsStr(left, id) {
				still = append(still, id)
			}
		}
	}
	j.st.Expanded = &Expansion{Values: values, Unfinished: append(still, left...)}
	if j.st.Expanded.Values == nil {
		j.st.Expanded.Values = []string{}
	}
	infos := make([]StepInfo, len(items))
	for i, it := range items {
		infos[i] = StepInfo{ID: it.def.ID, Name: it.def.Name, Phase: it.def.Phase, Needs: nonNil(it.def.Deps), FanOut: j.def.ID}
	}
	ev := Event{Type: EvFanOutExpanded, StepID: j.def.ID, Data: &FanOutExpanded{
		Added: added, Count: len(items), Items: infos, Needs: nonNil(j.def.Deps), Removed: removed, Source: fo.SourceText(),
		Unfinished: nonNil(j.st.Expanded.Unfinished),
	}}
	r.commit(append([]*StepState{j.st}, changed...), append([]Event{ev}, evs...)...)
	if r.fatal != nil || atSetup {
		return
	}
	// Count what changed: the items, the join, what it re-opened and what
	// waits for that.
	recount := append(append([]*stepRun{}, items...), j)
	for _, sr := range reopened {
		recount = append(recount, sr)
		recount = append(recount, sr.dependents...)
	}
	for _, sr := range recount {
		r.recount(sr)
	}
}

// expandFailed records a dynamic fan-out whose items cannot be read (its
// lines: file is missing, too many items ...) as a failed join step, which
// then acts as a failed step: the run stops, or with on_failure: continue
// its dependents run.
func (r *Runner) expandFailed(j *stepRun, err error, atSetup bool) {
	st := j.st
	r.stampJoin(j)
	st.Status = StatusFailure
	st.Error = fmt.Sprintf("cannot read the items of step %q: %v", j.def.ID, err)
	r.commit([]*StepState{st}, r.statusEvent(j))
	if r.fatal != nil {
		return
	}
	if j.def.OnFailure.Kind == spec.OnContinue {
		j.continued = true
		if !atSetup {
			r.release(j)
		}
		return
	}
	r.stop()
}

// recount counts a step's unsatisfied dependencies again and queues it when
// it is ready.
func (r *Runner) recount(sr *stepRun) {
	if sr.removed {
		return
	}
	sr.waiting = 0
	for _, d := range sr.deps {
		if d.group != sr && !satisfied(d) {
			sr.waiting++
		}
	}
	if sr.st.Status == StatusPending && (sr.join == nil && sr.waiting == 0 || sr.join != nil && !joinWaits(sr)) {
		r.push(sr)
	}
}

// gated reports whether an item must not start yet: its fan-out reads its
// items first in this session.
func gated(sr *stepRun) bool {
	g := sr.group
	return g != nil && g.join.dynamic && !g.join.expanded
}

// itemSettled reports whether an item lets its join be decided.
func itemSettled(status string) bool {
	return Terminal(status) && status != StatusPendingFailed && status != StatusAwaitingApproval
}

// wireFanOuts links items and joins; before the session's first commit.
func (r *Runner) wireFanOuts() {
	for _, sr := range r.steps {
		if !sr.def.Join || sr.def.FanOut == nil {
			continue
		}
		j := &joinRun{maxPar: sr.def.FanOut.MaxParallel, dynamic: sr.def.FanOut.Dynamic}
		for _, id := range sr.def.FanOut.ItemIDs {
			it := r.byID[id]
			if it == nil {
				continue
			}
			it.group = sr
			j.items = append(j.items, it)
			it.counted = itemSettled(it.st.Status)
			if !it.counted {
				j.waiting++
			}
		}
		sr.join = j
	}
}

// itemChanged updates the join of an item whose record was committed.
func (r *Runner) itemChanged(it *stepRun) {
	g := it.group
	settled := itemSettled(it.st.Status)
	if settled == it.counted {
		return
	}
	it.counted = settled
	if settled {
		g.join.waiting--
		if g.st.Status == StatusPending && !joinWaits(g) {
			r.push(g)
		}
	} else {
		g.join.waiting++
	}
}

// holdItem reports whether a ready item must wait for max_parallel (unless
// the array pass of this scheduling pass admits it); it is then kept, in
// plan order, until its fan-out has room again (releaseHeld).
func (r *Runner) holdItem(sr *stepRun) bool {
	g := sr.group
	if g == nil || g.join.maxPar <= 0 || sr.slot || g.join.running < g.join.maxPar || r.passAdmits(sr) {
		return false
	}
	heap.Push(&g.join.held, sr)
	return true
}

// releaseHeld lets the first held item of fan-out g (in plan order) go
// while g has room under max_parallel: when a slot of it was freed, and
// when an item let go took none (its condition skipped it, a gate or a
// spent budget kept it, it did not fit), so that the items that start
// are the first ready ones in plan order that max_parallel allows, as
// internal/model has it.
func (r *Runner) releaseHeld(g *stepRun) {
	if g.join.held.Len() > 0 && (g.join.maxPar <= 0 || g.join.running < g.join.maxPar) {
		r.unhold(g.join)
	}
}

// unhold makes the first item j holds back (in plan order) ready again.
func (r *Runner) unhold(j *joinRun) {
	next := heap.Pop(&j.held).(*stepRun)
	next.queued = false
	r.push(next)
}

// passAdmits reports whether an item beyond its fan-out's max_parallel
// may start as a task of the array pass that this scheduling pass opened:
// the engine's throttle then keeps it waiting (batch_array.go). An item
// that probes the cache first starts later, on its own, so it may not.
func (r *Runner) passAdmits(sr *stepRun) bool {
	p := sr.group.join.pass
	if p == nil || p.closed || p.outside >= p.max || r.cacheable(sr) {
		return false
	}
	key, ok := r.arrayKey(sr, limitsOf(sr.def, sr.st))
	return ok && key == p.key
}

// arrayKey is the key of the array (arrayKind) that an attempt of sr
// under lim would join; ok is false when its engine makes no arrays.
func (r *Runner) arrayKey(sr *stepRun, lim limits) (string, bool) {
	if ak, ok := r.kind(sr.def).(arrayKind); ok {
		return ak.arrayKey(sr.def, lim)
	}
	return "", false
}

// passJoin makes the attempt that starts for item sr (its slot just taken)
// a task of its fan-out's array pass: the first item in flight of a
// fan-out under max_parallel on an engine that makes arrays opens one;
// those started after it in the same scheduling pass, with its key, join
// it; others are counted outside it.
func (r *Runner) passJoin(sr *stepRun, ps *procSpec) {
	g := sr.group
	if g == nil || g.join.maxPar <= 0 || !r.filling {
		return // (a start after a cache probe is a job of its own)
	}
	j := g.join
	key, ok := r.arrayKey(sr, ps.lim)
	if j.running == 1 && ok {
		r.passN++
		j.pass = &arrayPass{id: r.passN, key: key, max: j.maxPar}
		r.passes = append(r.passes, j.pass)
		// Every item max_parallel held back is ready again: the pass may
		// admit it (passAdmits), in plan order, in this scheduling pass;
		// one it does not admit is held again.
		for j.held.Len() > 0 {
			r.unhold(j)
		}
	}
	p := j.pass
	if p == nil || p.closed {
		return
	}
	if ok && key == p.key {
		p.wg.Add(1)
		ps.pass = &passMember{pass: p}
		ps.timeoutFrom = fromRun // the engine's throttle may hold it back
		return
	}
	p.outside++
}

// closePasses ends the array passes the scheduling pass opened: their
// arrays go once their items arrived.
func (r *Runner) closePasses() {
	for _, p := range r.passes {
		p.close()
	}
	r.passes = r.passes[:0]
}

// slotChanged counts an item's job slot for max_parallel and lets a held
// item go when one is freed.
func (r *Runner) slotChanged(sr *stepRun, taken bool) {
	g := sr.group
	if g == nil {
		return
	}
	if taken {
		g.join.running++
		return
	}
	g.join.running--
	r.releaseHeld(g)
}

// stampJoin makes the record of a join step's decision a new attempt that
// starts and ends now and runs no process.
func (r *Runner) stampJoin(sr *stepRun) {
	st := sr.st
	now := r.now()
	st.Attempt++
	st.StartedAt, st.FinishedAt = timep(now), timep(now)
	st.DurationMs = 0
	st.ExitCode = nil
	st.Hash = StepHash(r.Plan, sr.def)
}

// decideJoin sets the join step's record from its items and returns its
// status event; the caller commits it.
func (r *Runner) decideJoin(sr *stepRun) Event {
	st := sr.st
	r.stampJoin(sr)
	st.CacheKey = ""
	var failed []string
	canceled, skipped := 0, 0
	for _, it := range sr.join.items {
		switch it.st.Status {
		case StatusSuccess, StatusCached:
		case StatusSkipped:
			skipped++
		case StatusCanceled:
			canceled++
		default:
			failed = append(failed, it.def.ID)
		}
	}
	var gone []string // items that left the run unfinished
	if st.Expanded != nil && sr.join.dynamic {
		gone = st.Expanded.Unfinished
	}
	if len(failed) == 0 && canceled == 0 && len(gone) == 0 && skipped > 0 && skipped == len(sr.join.items) {
		// Every item's condition was false: the fan-out ran nothing.
		st.Status, st.Error = StatusSkipped, ""
		return r.statusEvent(sr)
	}
	if len(failed) == 0 && canceled == 0 && len(gone) == 0 {
		st.Status, st.Error = StatusSuccess, ""
		keys := make([]string, len(sr.join.items))
		for i, it := range sr.join.items {
			keys[i] = NeedKey(it.st, r.Plan, it.def)
		}
		st.CacheKey = JoinKey(keys)
		return r.statusEvent(sr)
	}
	st.Status = StatusFailure
	// on_failure: continue holds wherever the join is decided, in the
	// session or as it ends after a stop (settlePending).
	sr.continued = sr.def.OnFailure.Kind == spec.OnContinue
	shown := failed
	more := ""
	if len(shown) > 10 {
		shown, more = shown[:10], fmt.Sprintf(" and %d more", len(failed)-10)
	}
	n := len(sr.join.items)
	switch {
	case len(failed) == 0 && canceled == 0:
		st.Error = ""
	case len(failed) == 0:
		st.Error = fmt.Sprintf("%d of %d items canceled", canceled, n)
	case canceled == 0:
		st.Error = fmt.Sprintf("%d of %d items failed: %s%s", len(failed), n, strings.Join(shown, ", "), more)
	default:
		st.Error = fmt.Sprintf("%d of %d items failed: %s%s; %d canceled", len(failed), n, strings.Join(shown, ", "), more, canceled)
	}
	if len(gone) > 0 {
		if st.Error != "" {
			st.Error += "; "
		}
		st.Error += goneError(r.RunID, gone)
	}
	return r.statusEvent(sr)
}

// runJoin decides a join step whose items are all settled, in the session.
func (r *Runner) runJoin(sr *stepRun) {
	ev := r.decideJoin(sr)
	r.commit([]*StepState{sr.st}, ev)
	if r.fatal != nil {
		return
	}
	if Status(sr.st.Status).Satisfies() || sr.continued {
		r.release(sr)
	}
}

// joinReady reports whether a join step can be decided: every item
// settled and the fan-out step's own needs satisfied, from the records as
// they are now (settlePending changes them before commit).
func joinReady(sr *stepRun) bool {
	if sr.join.dynamic && !sr.join.expanded {
		return false // it never read its items: canceled
	}
	for _, d := range sr.deps {
		if d.group != sr && !satisfied(d) {
			return false
		}
	}
	for _, it := range sr.join.items {
		if !itemSettled(it.st.Status) {
			return false
		}
	}
	return true
}

// goneError is the part of a join's {error} that names the items that
// left the run unfinished, and what the user can do.
func goneError(runID string, ids []string) string {
	shown, more := ids, ""
	if len(shown) > 10 {
		shown, more = shown[:10], fmt.Sprintf(" and %d more", len(ids)-10)
	}
	if len(ids) == 1 {
		return fmt.Sprintf("1 item left the run without succeeding (its file or line is gone): %s; put it back to run it again, or drop it: faber reset %s --step '%s'",
			ids[0], runID, ids[0])
	}
	return fmt.Sprintf("%d items left the run without succeeding (their files or lines are gone): %s%s; put them back to run them again, or drop them: faber reset %s --failed-only",
		len(ids), strings.Join(shown, ", "), more, runID)
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
