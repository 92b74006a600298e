package run

import (
	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/state"
)

// What a running session uses of its capacity, and which of its steps wait
// for resources (README "Capacity and requests"), is known only to its
// owner: faber status and the MCP server ask it over the run's control
// channel. A run that is not active, or whose owner does not answer in a
// short while, has none of it.

// Usage is what the owner of an active run says of its capacity, or nil.
func Usage(stateDir string, rs *exec.RunState) *exec.Usage {
	if rs == nil || rs.Status != exec.RunInProgress {
		return nil
	}
	return control.Usage(state.RunDir(stateDir, rs.RunID))
}

// Waiting is each waiting step's reason, by step ID; nil for u nil.
func Waiting(u *exec.Usage) map[string]string {
	if u == nil || len(u.Waiting) == 0 {
		return nil
	}
	m := make(map[string]string, len(u.Waiting))
	for _, w := range u.Waiting {
		m[w.Step] = w.Reason
	}
	return m
}

// LiveStatus is Status with what the run's owner says (Usage): the run's
// capacity and what is in use of it, and per step why it waits.
type LiveStatus struct {
	exec.RunState
	Part     *state.Part  `json:"part,omitempty"`
	Capacity exec.Amounts `json:"capacity"`
	InUse    exec.Amounts `json:"in_use"`
	Steps    []LiveStep   `json:"steps"`
}

// LiveStep is a step's record and, for one that waits for resources, why.
type LiveStep struct {
	*exec.StepState
	Waiting string `json:"waiting,omitempty"`
}

// WithUsage is st as 'faber status --json' prints it: st itself, or for an
// active run whose owner answers, its LiveStatus.
func WithUsage(stateDir string, st Status) any {
	u := Usage(stateDir, &st.RunState)
	if u == nil {
		return st
	}
	why := Waiting(u)
	out := LiveStatus{RunState: st.RunState, Part: st.Part, Capacity: u.Capacity, InUse: u.InUse,
		Steps: make([]LiveStep, len(st.Steps))}
	for i, s := range st.Steps {
		out.Steps[i] = LiveStep{StepState: s, Waiting: why[s.ID]}
	}
	return out
}
