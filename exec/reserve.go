package exec

import (
	"container/heap"
	"slices"
	"strconv"
	"strings"
)

// Reservations (README "Capacity and requests"): a step reserves its
// request — CPUs, memory, GPU devices and one unit of each of its pools —
// when it takes its job slot and releases it when it frees the slot, so
// whatever runs for it while it holds the slot (a cache probe, an attempt,
// a handler) holds the request. The scheduler (fill) starts a ready step
// only when its request fits what is free, leaving room for the oldest
// blocked step (the head): see fits.

// request is what a step reserves with its job slot; zero members reserve
// nothing of that resource.
type request struct {
	cpus   int
	memory int64
	gpus   int   // how many devices
	pools  []int // indices into Runner.pools, each once
}

func (q *request) empty() bool {
	return q.cpus == 0 && q.memory == 0 && q.gpus == 0 && len(q.pools) == 0
}

// held is what a step holds while it has its slot: its request and the
// devices it was given.
type held struct {
	req     request
	devices []int // GPU indices, lowest first
}

// inUse is what the steps holding a slot have reserved.
type inUse struct {
	cpus    int
	memory  int64
	devices []bool // devices[i]: GPU i is held
	ngpus   int
	pools   []int // by pool index
}

// setupPools numbers the plan's pools (file order) for requests.
func (r *Runner) setupPools() {
	p := r.Plan
	names := p.PoolNames
	if len(names) == 0 {
		for name := range p.Pools {
			names = append(names, name)
		}
	}
	r.poolIdx = make(map[string]int, len(names))
	for _, name := range names {
		if _, ok := r.poolIdx[name]; ok {
			continue
		}
		r.poolIdx[name] = len(r.poolNames)
		r.poolNames = append(r.poolNames, name)
		r.poolSize = append(r.poolSize, p.Pools[name])
	}
	r.use.pools = make([]int, len(r.poolNames))
}

// request is what sr reserves if it takes its slot now. A join and the end
// step request nothing; a step that runs on a batch scheduler (Slurm, Grid
// Engine) requests only its pools: its engine places its CPUs, memory and
// GPUs. Each member is capped at the capacity (validation refuses a larger
// request; a grown or classified memory limit may be larger), so that a
// request always fits once nothing else is held.
func (r *Runner) request(sr *stepRun) request {
	var q request
	if sr.isEnd || sr.join != nil || sr.def.Join {
		return q
	}
	for _, name := range sr.def.Pools {
		i, ok := r.poolIdx[name]
		if !ok || r.poolSize[i] <= 0 || slices.Contains(q.pools, i) {
			continue // not a pool of the plan (validation says so): no limit
		}
		q.pools = append(q.pools, i)
	}
	if !sr.def.Local() {
		return q
	}
	c := r.Capacity
	q.cpus = capAt(sr.def.CPUs, c.CPUs)
	q.memory = capAt(limitsOf(sr.def, sr.st).memory, c.Memory)
	q.gpus = capAt(sr.def.GPUs, c.GPUs)
	return q
}

// capAt is v at least 0 and at most c (c 0: no limit).
func capAt[T int | int64](v, c T) T {
	if v < 0 {
		return 0
	}
	if c > 0 && v > c {
		return c
	}
	return v
}

// fits reports whether q fits in what is free less what the head (the
// oldest ready step that did not fit; nil: none yet) needs, resource by
// resource. A resource q does not request always fits; a zero capacity
// field is no limit; a pool counts as a resource of its size.
func (r *Runner) fits(q, head *request) bool {
	c := r.Capacity
	var hc, hg int
	var hm int64
	if head != nil {
		hc, hm, hg = head.cpus, head.memory, head.gpus
	}
	if q.cpus > 0 && c.CPUs > 0 && q.cpus > c.CPUs-r.use.cpus-hc {
		return false
	}
	if q.memory > 0 && c.Memory > 0 && q.memory > c.Memory-r.use.memory-hm {
		return false
	}
	if q.gpus > 0 && c.GPUs > 0 && q.gpus > c.GPUs-r.use.ngpus-hg {
		return false
	}
	for _, i := range q.pools {
		free := r.poolSize[i] - r.use.pools[i]
		if head != nil && slices.Contains(head.pools, i) {
			free--
		}
		if free < 1 {
			return false
		}
	}
	return true
}

// reserve makes sr hold its request (takeSlot): the GPUs it gets are the
// lowest free indices. It is reserved whatever is free (a re-attached job
// holds what it held).
func (r *Runner) reserve(sr *stepRun) {
	q := r.request(sr)
	sr.held = nil
	if q.empty() {
		return
	}
	h := &held{req: q}
	r.use.cpus += q.cpus
	r.use.memory += q.memory
	for i := 0; len(h.devices) < q.gpus; i++ {
		if i == len(r.use.devices) {
			r.use.devices = append(r.use.devices, false)
		}
		if !r.use.devices[i] {
			r.use.devices[i] = true
			h.devices = append(h.devices, i)
		}
	}
	r.use.ngpus += len(h.devices)
	for _, i := range q.pools {
		r.use.pools[i]++
	}
	sr.held = h
}

// unreserve releases what sr holds (freeSlot).
func (r *Runner) unreserve(sr *stepRun) {
	h := sr.held
	if h == nil {
		return
	}
	sr.held = nil
	r.use.cpus -= h.req.cpus
	r.use.memory -= h.req.memory
	for _, i := range h.devices {
		r.use.devices[i] = false
	}
	r.use.ngpus -= len(h.devices)
	for _, i := range h.req.pools {
		r.use.pools[i]--
	}
}

// gpuEnv is the environment that names the GPUs sr holds, or nil.
func (sr *stepRun) gpuEnv() []string {
	if sr.held == nil || len(sr.held.devices) == 0 {
		return nil
	}
	ids := make([]string, len(sr.held.devices))
	for i, d := range sr.held.devices {
		ids[i] = strconv.Itoa(d)
	}
	list := strings.Join(ids, ",")
	return []string{"CUDA_VISIBLE_DEVICES=" + list, "FABER_GPUS=" + list}
}

// Reserved is what a step reserved with its job slot, on the step_status
// event of an attempt's start (README "Capacity and requests"); members
// are left out when empty.
type Reserved struct {
	CPUs        int      `json:"cpus,omitempty"`
	GPUs        []int    `json:"gpus,omitempty"`
	MemoryBytes int64    `json:"memory_bytes,omitempty"`
	Pools       []string `json:"pools,omitempty"`
}

// reserved is the event's record of what sr holds, or nil.
func (r *Runner) reserved(sr *stepRun) *Reserved {
	h := sr.held
	if h == nil {
		return nil
	}
	res := &Reserved{CPUs: h.req.cpus, MemoryBytes: h.req.memory}
	if len(h.devices) > 0 {
		res.GPUs = append([]int{}, h.devices...)
	}
	for _, i := range h.req.pools {
		res.Pools = append(res.Pools, r.poolNames[i])
	}
	return res
}

// A park holds the ready steps with one request that did not fit when fill
// last considered them, in plan order. fill takes the first ready step in
// plan order from the ready heap and the parks' first steps; once a park's
// first step does not fit, the rest of that park is passed over until what
// may fit changes (again, in fill): what is free only shrinks meanwhile.
// So a pass costs the parks' number, not the number of steps waiting (a
// fan-out of 10,000 items that request one CPU each is one park).
type park struct {
	key    reqKey
	steps  readyHeap
	failed bool // in this pass, its first step did not fit
}

// reqKey is a request as a map key.
type reqKey struct {
	cpus   int
	memory int64
	gpus   int
	pools  string
}

func (q *request) key() reqKey {
	k := reqKey{cpus: q.cpus, memory: q.memory, gpus: q.gpus}
	if len(q.pools) > 0 {
		b := make([]byte, 0, 4*len(q.pools))
		for _, i := range q.pools {
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, ',')
		}
		k.pools = string(b)
	}
	return k
}

// park parks sr, a ready step with request q that does not fit; it stays
// queued.
func (r *Runner) park(sr *stepRun, q request) *park {
	k := q.key()
	p := r.parks[k]
	if p == nil {
		if r.parks == nil {
			r.parks = map[reqKey]*park{}
		}
		p = &park{key: k}
		r.parks[k] = p
		r.parkList = append(r.parkList, p)
	}
	sr.queued = true
	heap.Push(&p.steps, sr)
	return p
}

// unfailParks makes every park's first step a candidate again.
func (r *Runner) unfailParks() {
	for _, p := range r.parkList {
		p.failed = false
	}
}

// nextReady takes the first ready step in plan order from the ready heap
// and the first steps of the parks not passed over; nil when there is none.
func (r *Runner) nextReady() *stepRun {
	best := -1
	for i, p := range r.parkList {
		if !p.failed && (best < 0 || readyBefore(p.steps[0], r.parkList[best].steps[0])) {
			best = i
		}
	}
	if best < 0 || r.ready.Len() > 0 && readyBefore(r.ready[0], r.parkList[best].steps[0]) {
		if r.ready.Len() == 0 {
			return nil
		}
		return heap.Pop(&r.ready).(*stepRun)
	}
	p := r.parkList[best]
	sr := heap.Pop(&p.steps).(*stepRun)
	if p.steps.Len() == 0 {
		delete(r.parks, p.key)
		r.parkList = slices.Delete(r.parkList, best, best+1)
	}
	return sr
}
