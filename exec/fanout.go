package exec

import (
	"fmt"
	"strings"

	"github.com/faber-run/faber/spec"
)

// ItemCounts counts the items of one fan-out by how they stand: done
// (success or cached), running (in progress, remediating, retrying), pending,
// and failed (anything else: failure, remediation_failed, pending_failed,
// canceled, interrupted). faber status and the live view both show these.
type ItemCounts struct {
	Total, Done, Failed, Running, Pending int
}

// Add counts n items (n < 0 takes them back) of a status.
func (c *ItemCounts) Add(status string, n int) {
	c.Total += n
	switch status {
	case StatusSuccess, StatusCached:
		c.Done += n
	case StatusInProgress, StatusRemediating, StatusRetrying:
		c.Running += n
	case StatusPending:
		c.Pending += n
	default:
		c.Failed += n
	}
}

// String is the counts as faber status shows them.
func (c ItemCounts) String() string {
	s := fmt.Sprintf("%d items: %d done", c.Total, c.Done)
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
type joinRun struct {
	items   []*stepRun
	waiting int // items not settled
	maxPar  int
	running int        // items holding a job slot
	held    []*stepRun // ready items waiting for max_parallel
}

// itemSettled reports whether an item lets its join be decided.
func itemSettled(status string) bool {
	return Terminal(status) && status != StatusPendingFailed
}

// wireFanOuts links items and joins; before the session's first commit.
func (r *Runner) wireFanOuts() {
	for _, sr := range r.steps {
		if !sr.def.Join || sr.def.FanOut == nil {
			continue
		}
		j := &joinRun{maxPar: sr.def.FanOut.MaxParallel}
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
		if g.join.waiting == 0 && g.waiting == 0 && g.st.Status == StatusPending {
			r.push(g)
		}
	} else {
		g.join.waiting++
	}
}

// holdItem reports whether a ready item must wait for max_parallel; it is
// then kept until an item of its fan-out frees its slot.
func (r *Runner) holdItem(sr *stepRun) bool {
	g := sr.group
	if g == nil || g.join.maxPar <= 0 || sr.slot || g.join.running < g.join.maxPar {
		return false
	}
	g.join.held = append(g.join.held, sr)
	return true
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
	if len(g.join.held) > 0 && (g.join.maxPar <= 0 || g.join.running < g.join.maxPar) {
		next := g.join.held[0]
		g.join.held = g.join.held[1:]
		next.queued = false
		r.push(next)
	}
}

// decideJoin sets the join step's record from its items and returns its
// status event; the caller commits it.
func (r *Runner) decideJoin(sr *stepRun) Event {
	st := sr.st
	now := r.now()
	st.Attempt++
	st.StartedAt, st.FinishedAt = timep(now), timep(now)
	st.DurationMs = 0
	st.ExitCode = nil
	st.Hash = StepHash(r.Plan, sr.def)
	st.CacheKey = ""
	var failed []string
	canceled := 0
	for _, it := range sr.join.items {
		switch it.st.Status {
		case StatusSuccess, StatusCached:
		case StatusCanceled:
			canceled++
		default:
			failed = append(failed, it.def.ID)
		}
	}
	if len(failed) == 0 && canceled == 0 {
		st.Status, st.Error = StatusSuccess, ""
		keys := make([]string, len(sr.join.items))
		for i, it := range sr.join.items {
			keys[i] = NeedKey(it.st, r.Plan, it.def)
		}
		st.CacheKey = JoinKey(keys)
		return r.statusEvent(sr)
	}
	st.Status = StatusFailure
	shown := failed
	more := ""
	if len(shown) > 10 {
		shown, more = shown[:10], fmt.Sprintf(" and %d more", len(failed)-10)
	}
	n := len(sr.join.items)
	switch {
	case len(failed) == 0:
		st.Error = fmt.Sprintf("%d of %d items canceled", canceled, n)
	case canceled == 0:
		st.Error = fmt.Sprintf("%d of %d items failed: %s%s", len(failed), n, strings.Join(shown, ", "), more)
	default:
		st.Error = fmt.Sprintf("%d of %d items failed: %s%s; %d canceled", len(failed), n, strings.Join(shown, ", "), more, canceled)
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
	switch {
	case sr.st.Status == StatusSuccess:
		r.release(sr)
	case sr.def.OnFailure.Kind == spec.OnContinue:
		sr.continued = true
		r.release(sr)
	}
}

// joinReady reports whether a join step can be decided: every item
// settled and the fan-out step's own needs satisfied, from the records as
// they are now (settlePending changes them before commit).
func joinReady(sr *stepRun) bool {
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
