package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Garbage collection for a short-lived CLI. Go's first collection comes at a
// 4 MB heap, which faber passes while it starts (kong's model, the plan,
// Badger's memtable and caches): a one-step run collected two or three
// times, and a chain of 100 steps three, each cycle taking CPU from the run
// it delays (about 3 ms of a one-step run's 19). So faber starts at GOGC=400
// (the first collection at 16 MB, which a short run may never reach), as
// cmd/compile does, until it knows the plan (tuneGC):
//
//   - a short plan (under shortPlan) keeps it until the first collection,
//     then goes back to Go's default: its heap stays small;
//   - a longer plan goes back to the default at once, a big one (bigPlan)
//     to +25%: their runs last, and their heap follows their live data.
//
// A plan is as long as its file, or as the steps it runs once its fan-outs
// are expanded, at stepBytes each, whichever is more (planWeight): the
// heap of a run is mostly its steps (their definitions, records and
// stepRuns, some 2.5 KB each), and a foreach: of 10,000 items is a plan of
// 80 bytes. Weighed by its file it ran at GOGC=400 and peaked at 186 MiB,
// where the same steps listed (300 KB) ran at +25% and peaked at 75 MiB.
// So the pace is set twice: with the
// file's size before the plan is parsed (tuneGC: the parse is what a big
// file costs), and with the expanded plan's steps after (tuneGCSteps); a
// dynamic fan-out (glob:, lines:) weighs its items when it reads them (the
// runner's Grown hook).
//
// The way back after the first collection is a finalizer, which runs only
// when the collector sweeps its object, sometimes one collection later: at
// GOGC=400 that second collection comes at five times the live heap, which
// a 2,000-step run took from 51 to 70 MB; hence the early return for all
// but short plans.
//
// A big plan's run that serves steps from the cache is paced apart from
// its first cache hit on (tuneGCHit). A hit starts no process: the run
// commits hits as fast as faber can, and at +25% of a heap that is still
// small it collects every few megabytes. A 10,000-item fan-out whose items
// were all cached (some 28 MB live, 220 MB allocated in under a second)
// collected 38 times, a quarter of its CPU. So from its first hit the heap
// may grow to a floor before it collects (heapFloor: 50 MB for 10,000
// steps), and by +25% of what is live once that is more; the pace is set
// again after every collection (floorPercent), never above the start-up
// pace. That run then took 0.85x the wall time (0.82x the CPU; farm-bench,
// 20 pairs) and peaked at 83 MB instead of 74. A run without a hit keeps
// +25%: its steps wait for their processes, and a floor from the start
// only raised its peak (a 10,000-item fan-out without inputs from 75 to
// 87 MB, the same steps listed from 81 to 87).
//
// GOGC or GOMEMLIMIT in the environment wins over all this.

// startGCPercent is the GOGC faber starts with: Go's minimum heap before a
// collection is 4 MB × GOGC/100.
const startGCPercent = 400

// bigPlan is the plan size from which faber collects garbage more often;
// shortPlan the size (~400 one-line steps) from which it leaves the start-up
// pace as soon as it has read the plan. stepBytes is what one step weighs
// (planWeight): about the shortest a step is written in a plan
// (`  - {id: s1, run: "true"}`), so that a fan-out's items weigh no less
// than the same steps listed, and 8,192 steps make a big plan.
const (
	bigPlan   = 256 << 10
	shortPlan = 16 << 10
	stepBytes = 32
)

// planWeight is how big a plan of planBytes that runs steps steps is, for
// the pace: the file's size, or its steps at stepBytes each if that is
// more (a fan-out makes many steps of a few lines).
func planWeight(planBytes int64, steps int) int64 {
	return max(planBytes, int64(steps)*stepBytes)
}

// gcTune.percent is the GOGC faber wants once start-up is over; planBytes
// is the size of the plan tuneGC was last given, and steps what
// tuneGCSteps was last told (planWeight weighs the two); hit says the run
// served a step from the cache; floor is heapFloor while a floor holds
// (0: none), and armed says a sentinel waits for the next collection to
// set the pace from it.
var gcTune struct {
	sync.Mutex
	percent   int
	planBytes int64
	steps     int
	hit       bool
	floor     int64
	armed     bool
}

// userGC reports whether the environment sets the collector's pace.
func userGC() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }

// tuneStartGC raises GOGC until the first collection (see above).
func tuneStartGC() {
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.percent, gcTune.planBytes = 100, 0
	gcTune.steps, gcTune.hit, gcTune.floor = 0, false, 0
	if userGC() {
		return
	}
	debug.SetGCPercent(startGCPercent)
	// An object nobody holds: its finalizer runs after the first
	// collection that finds it, which is the first one.
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		gcTune.Lock()
		defer gcTune.Unlock()
		debug.SetGCPercent(gcTune.percent)
	})
}

// gcSentinel is not a zero-size type, which may share one address and never
// be collected, and holds a pointer: a small object without one comes from
// the tiny allocator, which packs it with others into one 16-byte block
// whose finalizers run only when all of them are garbage. With an int64
// here the finalizer never ran in faber: short plans kept GOGC=400 to the
// end.
type gcSentinel struct{ _ *gcSentinel }

// tuneGC sets the collector's pace for a plan of planBytes, before it is
// parsed (see above). A plan that weighs bigPlan or more runs at +25% heap
// growth instead of Go's +100%: faber's heap is then mostly the plan and
// the run's records, kept to the end, and this keeps a 100,000-step run
// under 400 MB for some 8% more time.
func tuneGC(planBytes int64) {
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.planBytes = planBytes
	pace(planBytes)
}

// tuneGCSteps sets the pace again once the plan's fan-outs are expanded,
// for a run of steps steps (Plan.Steps) of the plan tuneGC was given: at
// the start of a session, and when a dynamic fan-out has read its items.
func tuneGCSteps(steps int) {
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.steps = steps
	pace(planWeight(gcTune.planBytes, steps))
}

// tuneGCHit is told of the run's first cache hit: a big plan's heap may
// grow to its floor from then on (see above).
func tuneGCHit() {
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.hit = true
	holdFloor()
}

// pace sets GOGC for a plan of weight w, with gcTune held.
func pace(w int64) {
	if w < shortPlan || userGC() {
		return
	}
	p := 100
	if w >= bigPlan {
		p = 25
	}
	gcTune.percent = p
	debug.SetGCPercent(p)
	holdFloor()
}

// stepLive is what the floor gives each step of a big run, and storeLive
// what it gives the store whatever the run's size: Badger's memtable
// arena, 10.4 MB, counted whole. A step of a 10,000-item fan-out holds
// some 2 to 3 KB at the run's end (its definition, record and state);
// 2.5 KB a step gained 0.89x against +25%; 4 KB gained 0.96x against
// 3 KB and peaked at 88–96 MB (bench/README.md).
const (
	stepLive  = 3 << 10
	storeLive = 10 << 20
)

// heapFloor is the heap a big run of steps steps that serves steps from
// the cache may grow to before it collects: 50 MB for 10,000 steps.
func heapFloor(steps int) int64 {
	return (storeLive + int64(steps)*stepLive) * 5 / 4
}

// floorPercent is the GOGC under which a heap of live bytes grows to
// floor before the next collection, or by +25% if that is more; never
// above the start-up pace. live is 0 before the first collection.
func floorPercent(floor, live int64) int {
	if live <= 0 || floor <= live*5/4 {
		return 25
	}
	return int(min((floor-live)*100/live, startGCPercent))
}

// holdFloor sets the floor, with gcTune held: for a big plan's run of
// known steps that has served a step from the cache, from the heap the
// last collection left live, and again after each collection (armFloor).
func holdFloor() {
	gcTune.floor = 0
	big := planWeight(gcTune.planBytes, gcTune.steps) >= bigPlan
	if !big || !gcTune.hit || gcTune.steps <= 0 || userGC() {
		return
	}
	gcTune.floor = heapFloor(gcTune.steps)
	gcTune.percent = floorPercent(gcTune.floor, liveHeap())
	debug.SetGCPercent(gcTune.percent)
	if !gcTune.armed {
		gcTune.armed = true
		armFloor()
	}
}

// armFloor sets the pace from the floor after the next collection, and
// after each one while there is a floor. A sentinel's finalizer runs after
// the collection that finds it (see gcSentinel).
func armFloor() {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		gcTune.Lock()
		defer gcTune.Unlock()
		if gcTune.floor == 0 {
			gcTune.armed = false
			return
		}
		gcTune.percent = floorPercent(gcTune.floor, liveHeap())
		debug.SetGCPercent(gcTune.percent)
		armFloor()
	})
}

// liveHeap is the heap the last collection marked live, 0 before the
// first (runtime/metrics; a test may read another).
var liveHeap = readLiveHeap

func readLiveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// tuneGCReader sets the pace for a command that reads a plan of planBytes
// and ends (validate, import): Go's default as soon as the plan is not
// short. Its heap is the plan's node trees, all live until it ends; at the
// start-up pace a 100,000-job Torc workflow (16 MB) peaked at 1.3 GB
// instead of 1.0, and at +25% (tuneGC's big plans) import took 1.6× the
// CPU for 0.8 GB.
func tuneGCReader(planBytes int64) {
	if planBytes < shortPlan || userGC() {
		return
	}
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.percent = 100
	debug.SetGCPercent(100)
}
