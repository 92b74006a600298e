package main

import (
	"os"
	"runtime"
	"runtime/debug"
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
// but short plans. GOGC or GOMEMLIMIT in the environment wins over all this.

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
// is the size of the plan tuneGC was last given, which tuneGCSteps weighs
// with the steps.
var gcTune struct {
	sync.Mutex
	percent   int
	planBytes int64
}

// userGC reports whether the environment sets the collector's pace.
func userGC() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }

// tuneStartGC raises GOGC until the first collection (see above).
func tuneStartGC() {
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.percent, gcTune.planBytes = 100, 0
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
	pace(planWeight(gcTune.planBytes, steps))
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
