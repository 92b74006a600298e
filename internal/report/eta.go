package report

import (
	"fmt"
	"time"

	"github.com/faber-run/faber/exec"
)

// Expectation is what an active run's ETA is computed from: each step's
// expected duration (StepHistory.ExpectedMs) over the plan's last finished
// runs.
type Expectation struct {
	// Runs is how many finished runs the history read.
	Runs     int
	Expected map[string]time.Duration // steps that never succeeded are absent
}

// Expect is the expectation of the plan's steps over its history.
func (h *History) Expect() Expectation {
	x := Expectation{Runs: len(h.Runs), Expected: map[string]time.Duration{}}
	for _, s := range h.Steps {
		if s.ExpectedMs != nil {
			x.Expected[s.ID] = time.Duration(*s.ExpectedMs) * time.Millisecond
		}
	}
	return x
}

// Estimate is an active run's ETA: the time it should still take, or why
// there is none.
type Estimate struct {
	Remaining time.Duration
	Runs      int    // the past runs it comes from
	Reason    string // set: no ETA, and why
}

// ETAJSON is an estimate as status --json prints it: {"seconds": N, "runs": M}
// or {"reason": "..."}.
type ETAJSON struct {
	Seconds *int64 `json:"seconds,omitempty"`
	Runs    int    `json:"runs,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// JSON is the estimate as status --json prints it.
func (e Estimate) JSON() ETAJSON {
	if e.Reason != "" {
		return ETAJSON{Reason: e.Reason}
	}
	s := int64((e.Remaining + time.Second/2) / time.Second)
	return ETAJSON{Seconds: &s, Runs: e.Runs}
}

// String is the estimate as faber status prints it after "ETA: ":
// "~3m10s (median of 12 past runs)" or "none (reason)".
func (e Estimate) String() string {
	if e.Reason != "" {
		return "none (" + e.Reason + ")"
	}
	runs := "runs"
	if e.Runs == 1 {
		runs = "run"
	}
	return fmt.Sprintf("~%s (median of %d past %s)", e.Remaining.Round(time.Second), e.Runs, runs)
}

// Short is the estimate as the live view's header shows it: "ETA ~3m10s"
// or "no ETA: reason".
func (e Estimate) Short() string {
	if e.Reason != "" {
		return "no ETA: " + e.Reason
	}
	return "ETA ~" + e.Remaining.Round(time.Second).String()
}

// finished says a step needs no more time in this run.
func finished(status string) bool {
	s := exec.Status(status)
	return s.Terminal() && s != exec.StatusPendingFailed
}

// ETA estimates how long the active run whose steps are given (a view's,
// plan order; a fan-out's items carry FanOut) still takes at now: the
// longest path by needs over the steps not yet finished, each weighted by
// its expected duration less the time it has been running (at least 0).
// Items are folded into their fan-out step, which runs from its first
// item's start.
func (x Expectation) ETA(steps []*exec.StepState, now time.Time) Estimate {
	if x.Runs == 0 {
		return Estimate{Reason: "no finished runs of this plan"}
	}
	type node struct {
		st      *exec.StepState
		since   time.Time // when it started running; zero: not running
		weight  time.Duration
		longest time.Duration
		state   int // 0 new, 1 visiting, 2 done
	}
	byID := map[string]*node{}
	var order []*node
	for _, st := range steps {
		if st.FanOut == "" {
			n := &node{st: st}
			byID[st.ID] = n
			order = append(order, n)
		}
	}
	for _, st := range steps {
		n := byID[st.ID]
		if st.FanOut != "" {
			n = byID[st.FanOut]
		}
		if n == nil || st.StartedAt == nil {
			continue
		}
		if exec.Status(st.Status).Active() || st.FanOut != "" {
			if n.since.IsZero() || st.StartedAt.Before(n.since) {
				n.since = *st.StartedAt
			}
		}
	}
	for _, n := range order {
		if finished(n.st.Status) {
			continue
		}
		exp, ok := x.Expected[n.st.ID]
		if !ok {
			return Estimate{Reason: fmt.Sprintf("step %s never succeeded in the last %d runs", n.st.ID, x.Runs)}
		}
		if !n.since.IsZero() {
			exp -= now.Sub(n.since)
		}
		n.weight = max(exp, 0)
	}
	var walk func(n *node) time.Duration
	walk = func(n *node) time.Duration {
		switch n.state {
		case 1:
			return 0 // a cycle (hand-edited records): cut
		case 2:
			return n.longest
		}
		n.state = 1
		needs := n.st.Needs
		if n.st.Phase == "" && len(needs) == 0 { // the end step follows every other
			for _, o := range order {
				if o != n {
					needs = append(needs, o.st.ID)
				}
			}
		}
		var before time.Duration
		for _, id := range needs {
			if m := byID[id]; m != nil {
				before = max(before, walk(m))
			}
		}
		n.longest, n.state = before+n.weight, 2
		return n.longest
	}
	var rem time.Duration
	for _, n := range order {
		rem = max(rem, walk(n))
	}
	return Estimate{Remaining: rem, Runs: x.Runs}
}
