package exec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/faber-run/faber/spec"
)

// Why steps wait (README "Capacity and requests"): a running session tells
// other faber processes (faber status, the MCP server), over its control
// channel, its capacity, what the steps holding a job slot reserved, and
// which ready steps wait for resources and why. It is worked out in the
// scheduler's goroutine when asked (ControlReq.Usage), from what fill
// left parked: the scheduler does nothing more per pass.

// Usage is a running session's capacity, what is in use of it, and the
// ready steps that wait for resources, in plan order.
type Usage struct {
	Capacity Amounts       `json:"capacity"`
	InUse    Amounts       `json:"in_use"`
	Waiting  []WaitingStep `json:"waiting,omitempty"`
}

// Amounts are CPUs, memory, GPUs and pool units (a capacity, or what is in
// use of it); a zero capacity member is no limit.
type Amounts struct {
	CPUs        int            `json:"cpus,omitempty"`
	MemoryBytes int64          `json:"memory_bytes,omitempty"`
	GPUs        int            `json:"gpus,omitempty"`
	Pools       map[string]int `json:"pools,omitempty"`
}

// WaitingStep is a ready step that waits for resources, and why
// (waitReason).
type WaitingStep struct {
	Step   string `json:"step"`
	Reason string `json:"reason"`
}

// usage is the session's Usage, or nil when none of its steps requests
// anything (README: such a plan runs as before requests existed, and
// faber status shows it as before): only the scheduler's goroutine calls
// it (the loop, answering a ControlReq).
func (r *Runner) usage() *Usage {
	if !r.requests() {
		return nil
	}
	c := r.Capacity
	res := &Usage{
		Capacity: Amounts{CPUs: c.CPUs, MemoryBytes: c.Memory, GPUs: c.GPUs},
		InUse:    Amounts{CPUs: r.use.cpus, MemoryBytes: r.use.memory, GPUs: r.use.ngpus},
	}
	if len(r.poolNames) > 0 {
		res.Capacity.Pools = make(map[string]int, len(r.poolNames))
		res.InUse.Pools = make(map[string]int, len(r.poolNames))
		for i, name := range r.poolNames {
			res.Capacity.Pools[name] = r.poolSize[i]
			res.InUse.Pools[name] = r.use.pools[i]
		}
	}
	// The head is the first parked step in plan order (fill's head); the
	// others may fit what is free but not what the head is kept.
	var head *stepRun
	for _, p := range r.parkList {
		if len(p.steps) > 0 && (head == nil || readyBefore(p.steps[0], head)) {
			head = p.steps[0]
		}
	}
	if head == nil {
		return res
	}
	hq := r.request(head)
	var waiting []*stepRun
	reasons := map[*stepRun]string{}
	for _, p := range r.parkList {
		if len(p.steps) == 0 {
			continue
		}
		q := r.request(p.steps[0])
		var why string
		if p.steps[0] == head {
			why = r.waitReason(&q, nil, "")
		} else {
			why = r.waitReason(&q, &hq, head.def.ID)
		}
		if why == "" {
			continue // it fits: it waits for a job slot, not for resources
		}
		for _, sr := range p.steps {
			if sr.removed || sr.waiting > 0 || sr.st.Status != StatusPending && sr.st.Status != StatusRetrying {
				continue
			}
			waiting = append(waiting, sr)
			reasons[sr] = why
		}
	}
	sortReady(waiting)
	res.Waiting = make([]WaitingStep, len(waiting))
	for i, sr := range waiting {
		res.Waiting[i] = WaitingStep{Step: sr.def.ID, Reason: reasons[sr]}
	}
	return res
}

// requests reports whether a step of the session requests anything; once
// one does, it is remembered (a request only appears: a classified retry
// may grow one).
func (r *Runner) requests() bool {
	if r.requested || len(r.poolNames) > 0 {
		return true
	}
	for _, sr := range r.steps {
		if q := r.request(sr); !q.empty() {
			r.requested = true
			return true
		}
	}
	return false
}

// sortReady sorts steps in plan order (readyBefore).
func sortReady(s []*stepRun) {
	slices.SortFunc(s, func(a, b *stepRun) int {
		switch {
		case readyBefore(a, b):
			return -1
		case readyBefore(b, a):
			return 1
		}
		return 0
	})
}

// waitReason says why a request q does not fit (fits): the first resource
// that does not, what q requests of it and what is free ("waiting: 6GiB
// memory, 2GiB free", "waiting: pool db (2 of 2 in use)"). With head (the
// request of the step named headID, the first that did not fit), a request
// that fits what is free but not what the head is kept says so (", kept
// for big"). "" when q fits.
func (r *Runner) waitReason(q, head *request, headID string) string {
	c := r.Capacity
	if why := r.shortOf(q, c, nil); why != "" {
		return "waiting: " + why
	}
	if head == nil {
		return ""
	}
	if why := r.shortOf(q, c, head); why != "" {
		return "waiting: " + why + ", kept for " + headID
	}
	return ""
}

// shortOf names the first resource of q that does not fit what is free
// less what head requests (nil: nothing), or "".
func (r *Runner) shortOf(q *request, c spec.Capacity, head *request) string {
	var hc, hg int
	var hm int64
	if head != nil {
		hc, hm, hg = head.cpus, head.memory, head.gpus
	}
	if free := c.CPUs - r.use.cpus - hc; q.cpus > 0 && c.CPUs > 0 && q.cpus > free {
		return fmt.Sprintf("%s, %d free", Count(q.cpus, "CPU"), max(free, 0))
	}
	if free := c.Memory - r.use.memory - hm; q.memory > 0 && c.Memory > 0 && q.memory > free {
		return fmt.Sprintf("%s memory, %s free", spec.FormatSize(q.memory), spec.FormatSize(max(free, 0)))
	}
	if free := c.GPUs - r.use.ngpus - hg; q.gpus > 0 && c.GPUs > 0 && q.gpus > free {
		return fmt.Sprintf("%s, %d free", Count(q.gpus, "GPU"), max(free, 0))
	}
	for _, i := range q.pools {
		used := r.use.pools[i]
		if head != nil && slices.Contains(head.pools, i) {
			if used+1 >= r.poolSize[i] {
				return fmt.Sprintf("pool %s (%d of %d in use)", r.poolNames[i], used, r.poolSize[i])
			}
			continue
		}
		if used >= r.poolSize[i] {
			return fmt.Sprintf("pool %s (%d of %d in use)", r.poolNames[i], used, r.poolSize[i])
		}
	}
	return ""
}

// Count is "1 CPU", "2 CPUs": n of unit, plural when n is not 1.
func Count[N ~int | ~int64](n N, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(int64(n), 10) + " " + unit + "s"
}

// CapacityText is the capacity line of 'faber status' for a running
// session: "capacity: 4 CPUs, 8GiB; in use: 3 CPUs, 6GiB; pools db 2/2".
func (res *Usage) CapacityText() string {
	c, u := res.Capacity, res.InUse
	var capParts, useParts []string
	if c.CPUs > 0 {
		capParts = append(capParts, Count(c.CPUs, "CPU"))
		useParts = append(useParts, Count(u.CPUs, "CPU"))
	}
	if c.MemoryBytes > 0 {
		capParts = append(capParts, spec.FormatSize(c.MemoryBytes))
		if u.MemoryBytes > 0 {
			useParts = append(useParts, spec.FormatSize(u.MemoryBytes))
		} else {
			useParts = append(useParts, "no memory") // not "0B"
		}
	}
	if c.GPUs > 0 {
		capParts = append(capParts, Count(c.GPUs, "GPU"))
		useParts = append(useParts, Count(u.GPUs, "GPU"))
	}
	if len(capParts) == 0 {
		capParts = append(capParts, "no limit")
	}
	if len(useParts) == 0 {
		useParts = append(useParts, "nothing")
	}
	s := "capacity: " + strings.Join(capParts, ", ") + "; in use: " + strings.Join(useParts, ", ")
	if len(c.Pools) > 0 {
		names := make([]string, 0, len(c.Pools))
		for name := range c.Pools {
			names = append(names, name)
		}
		slices.Sort(names)
		pools := make([]string, len(names))
		for i, name := range names {
			pools[i] = fmt.Sprintf("%s %d/%d", name, u.Pools[name], c.Pools[name])
		}
		s += "; pools " + strings.Join(pools, ", ")
	}
	return s
}
