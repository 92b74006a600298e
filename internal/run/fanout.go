package run

import (
	"fmt"

	"github.com/faber-run/faber/exec"
)

// ItemCounts counts the items of one fan-out step by how they stand.
type ItemCounts struct {
	Total, Done, Failed, Running, Pending int
}

// String is the counts as `faber status` shows them.
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

// Add counts one item.
func (c *ItemCounts) Add(status string) {
	c.Total++
	switch status {
	case exec.StatusSuccess, exec.StatusCached:
		c.Done++
	case exec.StatusInProgress, exec.StatusRemediating, exec.StatusRetrying:
		c.Running++
	case exec.StatusPending:
		c.Pending++
	default:
		c.Failed++
	}
}

// FanOuts groups the item steps of a run under their fan-out step: the
// counts and the items, in plan order, by fan-out step id.
func FanOuts(steps []*exec.StepState) (map[string]*ItemCounts, map[string][]*exec.StepState) {
	counts := map[string]*ItemCounts{}
	items := map[string][]*exec.StepState{}
	for _, st := range steps {
		if st.FanOut == "" {
			continue
		}
		c := counts[st.FanOut]
		if c == nil {
			c = &ItemCounts{}
			counts[st.FanOut] = c
		}
		c.Add(st.Status)
		items[st.FanOut] = append(items[st.FanOut], st)
	}
	return counts, items
}
