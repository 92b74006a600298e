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
// it delays. So faber starts at GOGC=400 (the first collection at 16 MB,
// which a run of a few hundred steps may never reach) and, once that first
// collection has happened, goes back to what it wants for the plan (tuneGC):
// from there on the heap follows the run's live data as with Go's default,
// so a long run's peak memory does not grow. cmd/compile does the same at
// start-up. GOGC or GOMEMLIMIT in the environment wins over both.

// startGCPercent is the GOGC faber starts with: Go's minimum heap before a
// collection is 4 MB × GOGC/100.
const startGCPercent = 400

// bigPlan is the plan size from which faber collects garbage more often.
const bigPlan = 256 << 10

// gcTune.percent is the GOGC faber wants once start-up is over.
var gcTune struct {
	sync.Mutex
	percent int
}

// userGC reports whether the environment sets the collector's pace.
func userGC() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }

// tuneStartGC raises GOGC until the first collection (see above).
func tuneStartGC() {
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.percent = 100
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

// gcSentinel is not a zero-size type: those may share one address and
// never be collected.
type gcSentinel struct{ _ int64 }

// tuneGC makes the garbage collector run at +25% heap growth instead of Go's
// +100% for a plan of planBytes ≥ bigPlan: faber's heap is then mostly the
// plan and the run's records, kept to the end, and this keeps a
// 100,000-step run under 400 MB for some 8% more time. It applies at once
// (a big plan alone passes the start-up heap). A small plan keeps Go's
// default once start-up is over: its heap is too small for it to matter,
// and collecting more often would slow it.
func tuneGC(planBytes int64) {
	if planBytes < bigPlan || userGC() {
		return
	}
	gcTune.Lock()
	defer gcTune.Unlock()
	gcTune.percent = 25
	debug.SetGCPercent(25)
}
