package exec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/faber-run/faber/spec"
)

// The packing scheduler (reserve.go, fill): plans are parsed from YAML
// without requests, then given them by setting the spec fields.

// runReq runs plan text after set gives its steps requests, with capacity
// c and jobs slots; it checks that everything reserved was released.
func runReq(t *testing.T, text string, c spec.Capacity, jobs int, set func(p *spec.Plan)) (*fakeStore, string, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the plans use sh")
	}
	dir := t.TempDir()
	p := writePlan(t, dir, text)
	if set != nil {
		set(p)
	}
	store := &fakeStore{}
	r := &Runner{Plan: p, RunID: "t-20260101T000000-abcd", RunDir: filepath.Join(dir, "run"), Store: store, Jobs: jobs, Capacity: c}
	status, err := r.Run(t.Context(), nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if r.use.cpus != 0 || r.use.memory != 0 || r.use.ngpus != 0 || slices.Contains(r.use.devices, true) || slices.ContainsFunc(r.use.pools, func(n int) bool { return n != 0 }) {
		t.Errorf("still reserved after the run: %+v", r.use)
	}
	return store, status, dir
}

func stepDef(p *spec.Plan, id string) *spec.Step {
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	panic("no step " + id)
}

// holding is a sweep over the events: a step holds what its attempt's start
// reserved until its next step_status event that is not in_progress or
// remediating (its handler keeps its slot).
type holding struct {
	cur    map[string]*Reserved
	max    Reserved // the largest sums seen (GPUs: the most devices)
	pools  map[string]int
	maxP   map[string]int
	starts []string // steps in the order their attempts started
}

func sweep(t *testing.T, evs []Event, c spec.Capacity, poolSize map[string]int) *holding {
	t.Helper()
	h := &holding{cur: map[string]*Reserved{}, pools: map[string]int{}, maxP: map[string]int{}}
	for _, e := range evs {
		if e.Type != EvStepStatus {
			continue
		}
		if e.Status == StatusInProgress {
			h.starts = append(h.starts, e.StepID)
			res := e.Data.(*StepStatus).Reserved
			if res == nil {
				continue
			}
			if h.cur[e.StepID] != nil {
				t.Fatalf("%s starts while it holds a reservation", e.StepID)
			}
			h.cur[e.StepID] = res
			var cpus, gpus int
			var mem int64
			devices := map[int]string{}
			for id, r := range h.cur {
				cpus += r.CPUs
				mem += r.MemoryBytes
				gpus += len(r.GPUs)
				for _, d := range r.GPUs {
					if other, ok := devices[d]; ok {
						t.Fatalf("GPU %d held by %s and %s at once", d, other, id)
					}
					devices[d] = id
				}
			}
			for _, name := range res.Pools {
				h.pools[name]++
				h.maxP[name] = max(h.maxP[name], h.pools[name])
				if h.pools[name] > poolSize[name] {
					t.Fatalf("pool %s: %d holders, its size is %d", name, h.pools[name], poolSize[name])
				}
			}
			if c.CPUs > 0 && cpus > c.CPUs || c.Memory > 0 && mem > c.Memory || c.GPUs > 0 && gpus > c.GPUs {
				t.Fatalf("oversubscribed at %s's start: %d cpus, %d bytes, %d GPUs; capacity %+v", e.StepID, cpus, mem, gpus, c)
			}
			h.max.CPUs = max(h.max.CPUs, cpus)
			h.max.MemoryBytes = max(h.max.MemoryBytes, mem)
			h.max.GPUs = make([]int, max(len(h.max.GPUs), gpus))
			continue
		}
		if e.Status == StatusRemediating {
			continue
		}
		if res := h.cur[e.StepID]; res != nil {
			for _, name := range res.Pools {
				h.pools[name]--
			}
			delete(h.cur, e.StepID)
		}
	}
	return h
}

func (h *holding) before(a, b string) bool {
	i, j := slices.Index(h.starts, a), slices.Index(h.starts, b)
	return i >= 0 && j >= 0 && i < j
}

// TestPackOrder: in plan order, a step that does not fit becomes the head;
// a later one starts only if it fits in what is free less the head's
// request; a step that requests nothing of the short resource fits.
func TestPackOrder(t *testing.T) {
	plan := `name: t
steps:
  - {id: a, run: "sleep 0.2", needs: []}
  - {id: b, run: "true", needs: []}
  - {id: c, run: "true", needs: []}
  - {id: d, run: "true", needs: []}
  - {id: e, run: "true", needs: []}
`
	c := spec.Capacity{CPUs: 4, Memory: 8 << 30}
	store, status, _ := runReq(t, plan, c, 10, func(p *spec.Plan) {
		stepDef(p, "a").CPUs = 3
		stepDef(p, "b").CPUs = 2         // the head while a runs
		stepDef(p, "c").Memory = 1 << 30 // no CPUs: fits beside a
		stepDef(p, "d").CPUs = 1         // would fit in what is free, not beside the head
		// e requests nothing: limited by jobs alone
	})
	if status != RunSuccess {
		t.Fatalf("status %s", status)
	}
	h := sweep(t, store.events, c, nil)
	types := store.types()
	aEnd := index(types, EvStepStatus+" a "+StatusSuccess)
	for _, id := range []string{"a", "c", "e"} {
		if i := index(types, EvStepStatus+" "+id+" "+StatusInProgress); i < 0 || i > aEnd {
			t.Errorf("%s did not start beside a:\n%s", id, strings.Join(types, "\n"))
		}
	}
	for _, id := range []string{"b", "d"} {
		if i := index(types, EvStepStatus+" "+id+" "+StatusInProgress); i < aEnd {
			t.Errorf("%s started beside a:\n%s", id, strings.Join(types, "\n"))
		}
	}
	if !h.before("b", "d") {
		t.Errorf("the head b did not start before d: %v", h.starts)
	}
	if h.max.CPUs > 4 {
		t.Errorf("max cpus %d", h.max.CPUs)
	}
}

// TestPackHeadNotStarved: a step needing the whole capacity, behind four
// running one-CPU steps and ahead of a stream of others, starts as soon as
// the four end, before any of the stream.
func TestPackHeadNotStarved(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\nsteps:\n")
	for i := range 4 {
		fmt.Fprintf(&b, "  - {id: s%d, run: \"sleep 0.05\", needs: []}\n", i)
	}
	b.WriteString("  - {id: big, run: \"true\", needs: []}\n")
	for i := 4; i < 16; i++ {
		fmt.Fprintf(&b, "  - {id: s%d, run: \"sleep 0.02\", needs: []}\n", i)
	}
	c := spec.Capacity{CPUs: 4}
	store, status, _ := runReq(t, b.String(), c, 8, func(p *spec.Plan) {
		for _, s := range p.Steps {
			s.CPUs = 1
		}
		stepDef(p, "big").CPUs = 4
	})
	if status != RunSuccess {
		t.Fatalf("status %s", status)
	}
	h := sweep(t, store.events, c, nil)
	i := slices.Index(h.starts, "big")
	if i != 4 {
		t.Fatalf("big started %dth: %v", i+1, h.starts)
	}
	if h.max.CPUs != 4 {
		t.Errorf("max cpus %d, want 4", h.max.CPUs)
	}
}

// TestPackPoolsFanOut: a pool caps the items of a fan-out together, and
// a step of another fan-out that holds it too.
func TestPackPoolsFanOut(t *testing.T) {
	plan := `name: t
steps:
  - {id: x, foreach: [a, b, c, d, e, f], run: "sleep 0.05", needs: []}
  - {id: y, foreach: [a, b, c], run: "sleep 0.05", needs: []}
  - {id: z, foreach: [a, b, c], run: "sleep 0.01", needs: []}
`
	pools := map[string]int{"db": 2}
	store, status, _ := runReq(t, plan, spec.Capacity{}, 8, func(p *spec.Plan) {
		p.Pools, p.PoolNames = pools, []string{"db"}
		for _, s := range p.Steps {
			if !s.Join && (s.FanOutOf == "x" || s.FanOutOf == "y") {
				s.Pools = []string{"db"}
			}
		}
	})
	if status != RunSuccess {
		t.Fatalf("status %s", status)
	}
	h := sweep(t, store.events, spec.Capacity{}, pools)
	if h.maxP["db"] != 2 {
		t.Errorf("db held by at most %d at once, want 2", h.maxP["db"])
	}
	// z's items need no pool: they start at once, beside the first two.
	for _, id := range h.starts[:2] {
		if !strings.HasPrefix(id, "x") {
			t.Errorf("starts %v", h.starts)
		}
	}
	if n := len(h.starts); n != 12 {
		t.Errorf("%d starts, want 12: %v", n, h.starts)
	}
}

// TestPackGPUs: a step gets the lowest free device indices, in
// CUDA_VISIBLE_DEVICES and FABER_GPUS, never those another holds; they
// are released with its slot.
func TestPackGPUs(t *testing.T) {
	plan := `name: t
steps:
  - {id: g1, run: "echo $CUDA_VISIBLE_DEVICES/$FABER_GPUS > g1.txt; sleep 0.2", needs: []}
  - {id: g2, run: "echo $CUDA_VISIBLE_DEVICES/$FABER_GPUS > g2.txt; sleep 0.1", needs: []}
  - {id: g3, run: "echo $CUDA_VISIBLE_DEVICES/$FABER_GPUS > g3.txt", needs: []}
  - {id: n, run: "echo ${CUDA_VISIBLE_DEVICES-unset}/${FABER_GPUS-unset} > n.txt", needs: []}
`
	c := spec.Capacity{GPUs: 3}
	store, status, dir := runReq(t, plan, c, 4, func(p *spec.Plan) {
		stepDef(p, "g1").GPUs = 2
		stepDef(p, "g2").GPUs = 1
		stepDef(p, "g3").GPUs = 2
	})
	if status != RunSuccess {
		t.Fatalf("status %s", status)
	}
	h := sweep(t, store.events, c, nil)
	got := map[string][]int{}
	for _, e := range store.events {
		if e.Type == EvStepStatus && e.Status == StatusInProgress {
			if res := e.Data.(*StepStatus).Reserved; res != nil {
				got[e.StepID] = res.GPUs
			}
		}
	}
	if !slices.Equal(got["g1"], []int{0, 1}) || !slices.Equal(got["g2"], []int{2}) || len(got["g3"]) != 2 {
		t.Errorf("devices %v", got)
	}
	if !h.before("g1", "g3") || !h.before("g2", "g3") {
		t.Errorf("starts %v", h.starts)
	}
	for id, devs := range got {
		b, _ := os.ReadFile(filepath.Join(dir, id+".txt"))
		list := strings.Trim(strings.ReplaceAll(fmt.Sprint(devs), " ", ","), "[]")
		if want := list + "/" + list + "\n"; string(b) != want {
			t.Errorf("%s's environment: %q, want %q", id, b, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "n.txt")); string(b) != "unset/unset\n" {
		t.Errorf("n's environment: %q", b)
	}
}

// TestPackHandlerHolds: a step's on_failure handler runs while the step
// holds its slot, so it holds the request too (and sees its GPUs).
func TestPackHandlerHolds(t *testing.T) {
	plan := `name: t
commands: {/fix: "sh -c 'echo $FABER_GPUS > fix.txt; sleep 0.2'"}
steps:
  - {id: a, run: "exit 1", result_handling: {on_failure: {command: /fix, retry_on_success: false}}, needs: []}
  - {id: b, run: "true", needs: []}
`
	c := spec.Capacity{CPUs: 3, GPUs: 1}
	store, _, dir := runReq(t, plan, c, 2, func(p *spec.Plan) {
		a := stepDef(p, "a")
		a.CPUs, a.GPUs = 2, 1
		stepDef(p, "b").CPUs = 2
	})
	types := store.types()
	hi, bi := index(types, EvHandlerInvoked+" a"), index(types, EvStepStatus+" b "+StatusInProgress)
	if hi < 0 || bi >= 0 && bi < hi {
		t.Errorf("b started while a's handler ran:\n%s", strings.Join(types, "\n"))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "fix.txt")); string(b) != "0\n" {
		t.Errorf("handler's FABER_GPUS: %q", b)
	}
}

// TestPackMemoryFactorCapped: a retry whose memory grew past the capacity
// requests, and is limited to, the capacity's memory; its reservation
// event says so.
func TestPackMemoryFactorCapped(t *testing.T) {
	plan := `name: t
failure_handlers:
  - name: mem
    rules:
      - {exit_codes: [3], max_retries: 2, memory_factor: 4}
steps:
  - {id: a, memory: 300MiB, failure_handler: mem, run: "test -e again && exit 0; touch again; exit 3", needs: []}
`
	c := spec.Capacity{Memory: 1 << 30}
	store, status, _ := runReq(t, plan, c, 1, nil)
	if status != RunSuccess {
		t.Fatalf("status %s", status)
	}
	var rr *RetryReserved
	var res []*Reserved
	for _, e := range store.events {
		switch {
		case e.Type == EvRetryReserved:
			rr = e.Data.(*RetryReserved)
		case e.Type == EvStepStatus && e.Status == StatusInProgress:
			res = append(res, e.Data.(*StepStatus).Reserved)
		}
	}
	if rr == nil || rr.MemoryBytes != 1<<30 || !rr.MemoryCapped {
		t.Fatalf("retry reserved: %+v", rr)
	}
	if len(res) != 2 || res[0].MemoryBytes != 300<<20 || res[1].MemoryBytes != 1<<30 {
		t.Fatalf("reserved %+v", res)
	}
	if l := store.steps["a"].Limits; l == nil || l.MemoryBytes != 1<<30 {
		t.Errorf("limits %+v", l)
	}
}

// TestPackNoRequestsNoReserved: a plan without requests reserves nothing
// and its events say nothing of it.
func TestPackNoRequestsNoReserved(t *testing.T) {
	store, _, _ := runReq(t, "name: t\nsteps:\n  - {id: a, run: \"true\"}\n", spec.Capacity{CPUs: 2, Memory: 1 << 30, GPUs: 1}, 1, nil)
	for _, e := range store.events {
		if strings.Contains(string(e.JSON), "reserved") {
			t.Errorf("event %s: %s", e.Type, e.JSON)
		}
	}
}

// TestPackRandom: over many random plans (requests, pools, capacity,
// jobs, needs), the sum of what the holders reserved never exceeds the
// capacity nor a pool's size, devices are never shared, and every step
// runs.
func TestPackRandom(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := range n {
		rng := rand.New(rand.NewPCG(uint64(seed), 31))
		c := spec.Capacity{CPUs: 1 + rng.IntN(4), Memory: int64(1+rng.IntN(4)) << 30, GPUs: rng.IntN(3)}
		pools := map[string]int{"p": 1 + rng.IntN(2), "q": 1 + rng.IntN(3)}
		steps := 3 + rng.IntN(8)
		var b strings.Builder
		b.WriteString("name: t\nsteps:\n")
		for i := range steps {
			needs := ", needs: []"
			if i > 0 && rng.IntN(3) == 0 {
				needs = fmt.Sprintf(", needs: [s%d]", rng.IntN(i))
			}
			run := "true"
			if rng.IntN(2) == 0 {
				run = "sleep 0.0" + fmt.Sprint(1+rng.IntN(3))
			}
			fmt.Fprintf(&b, "  - {id: s%d, run: %q%s}\n", i, run, needs)
		}
		jobs := 1 + rng.IntN(6)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			store, status, _ := runReq(t, b.String(), c, jobs, func(p *spec.Plan) {
				p.Pools, p.PoolNames = pools, []string{"p", "q"}
				for _, s := range p.Steps {
					s.CPUs = rng.IntN(c.CPUs + 1)
					s.Memory = int64(rng.IntN(int(c.Memory>>30)+1)) << 30
					if c.GPUs > 0 {
						s.GPUs = rng.IntN(c.GPUs + 1)
					}
					for _, name := range []string{"p", "q"} {
						if rng.IntN(3) == 0 {
							s.Pools = append(s.Pools, name)
						}
					}
				}
			})
			if status != RunSuccess {
				t.Fatalf("status %s", status)
			}
			h := sweep(t, store.events, c, pools)
			if len(h.starts) != steps {
				t.Errorf("%d starts of %d steps", len(h.starts), steps)
			}
		})
	}
}

// TestPackSkipNeedsNoRoom: a step whose when: is false is skipped when it
// comes out of the ready queue, whatever is free: it takes no slot and
// reserves nothing, even behind a head that waits.
func TestPackSkipNeedsNoRoom(t *testing.T) {
	plan := `name: t
steps:
  - {id: a, run: "sleep 0.2", needs: []}
  - {id: b, run: "true", needs: []}
  - {id: c, when: "1 == 2", run: "true", needs: []}
`
	c := spec.Capacity{CPUs: 1}
	store, status, _ := runReq(t, plan, c, 4, func(p *spec.Plan) {
		for _, s := range p.Steps {
			s.CPUs = 1
		}
	})
	if status != RunSuccess {
		t.Fatalf("status %s", status)
	}
	types := store.types()
	if i, j := index(types, EvStepStatus+" c "+StatusSkipped), index(types, EvStepStatus+" a "+StatusSuccess); i < 0 || i > j {
		t.Errorf("c was not skipped while a ran:\n%s", strings.Join(types, "\n"))
	}
}
