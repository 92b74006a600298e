package run

import (
	"github.com/faber-run/faber/exec"
)

// FanOuts groups the item steps of a run under their fan-out step: the
// counts and the items, in plan order, by fan-out step id.
func FanOuts(steps []*exec.StepState) (map[string]*exec.ItemCounts, map[string][]*exec.StepState) {
	counts := map[string]*exec.ItemCounts{}
	items := map[string][]*exec.StepState{}
	for _, st := range steps {
		if st.FanOut == "" {
			continue
		}
		c := counts[st.FanOut]
		if c == nil {
			c = &exec.ItemCounts{}
			counts[st.FanOut] = c
		}
		c.Add(st.Status, 1)
		items[st.FanOut] = append(items[st.FanOut], st)
	}
	return counts, items
}
