package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// gogc reads the collector's current GOGC without changing it.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestStartGC: start-up runs at startGCPercent until the first collection,
// then at what tuneGC chose (Go's 100 for a small plan, 25 for a big one,
// even when the plan was read before that collection).
func TestStartGC(t *testing.T) {
	if userGC() {
		t.Skip("GOGC or GOMEMLIMIT is set")
	}
	defer func() {
		gcTune.Lock()
		gcTune.percent = 100
		gcTune.Unlock()
		debug.SetGCPercent(100)
	}()
	for _, tc := range []struct {
		name string
		plan int64
		want int
	}{
		{"short plan", 1 << 10, 100},
		{"longer plan", shortPlan, 100},
		{"big plan", bigPlan, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tuneStartGC()
			if got := gogc(); got != startGCPercent {
				t.Fatalf("GOGC after tuneStartGC = %d, want %d", got, startGCPercent)
			}
			tuneGC(tc.plan)
			switch got := gogc(); {
			case tc.plan < shortPlan && got != startGCPercent:
				t.Fatalf("a short plan changed GOGC before the first collection: %d", got)
			case tc.plan >= shortPlan && got != tc.want:
				t.Fatalf("a plan of %d bytes left GOGC at %d before the first collection, want %d at once", tc.plan, got, tc.want)
			}
			// The sentinel's finalizer runs on its own goroutine after a
			// collection; give it a few.
			deadline := time.Now().Add(10 * time.Second)
			for gogc() != tc.want && time.Now().Before(deadline) {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			if got := gogc(); got != tc.want {
				t.Fatalf("GOGC after the first collection = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestStartGCUserWins: GOGC in the environment is left alone.
func TestStartGCUserWins(t *testing.T) {
	t.Setenv("GOGC", "100")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	debug.SetGCPercent(100)
	tuneStartGC()
	tuneGC(bigPlan)
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC = %d with GOGC=100 in the environment, want 100", got)
	}
}

// TestGCReader: validate and import leave the start-up pace at once for a
// plan that is not short (their heap is the plan's trees), and keep it for
// a short one.
func TestGCReader(t *testing.T) {
	if userGC() {
		t.Skip("GOGC or GOMEMLIMIT is set")
	}
	defer func() {
		gcTune.Lock()
		gcTune.percent = 100
		gcTune.Unlock()
		debug.SetGCPercent(100)
	}()
	tuneStartGC()
	tuneGCReader(1 << 10)
	if got := gogc(); got != startGCPercent {
		t.Fatalf("a short plan: GOGC %d, want %d until the first collection", got, startGCPercent)
	}
	tuneGCReader(bigPlan)
	if got := gogc(); got != 100 {
		t.Fatalf("a big plan: GOGC %d, want 100 at once", got)
	}
}

// resetGC puts the pace back to Go's default after a test of it.
func resetGC() {
	gcTune.Lock()
	gcTune.percent, gcTune.planBytes = 100, 0
	gcTune.steps, gcTune.hit, gcTune.floor = 0, false, 0
	gcTune.Unlock()
	debug.SetGCPercent(100)
}

// TestGCSteps: once the plan is parsed, the pace follows its steps, its
// fan-outs expanded, at stepBytes each, or the file's size if that is
// more: a foreach: of 10,000 items in a plan of a hundred bytes runs at
// the pace of the same steps listed.
func TestGCSteps(t *testing.T) {
	if userGC() {
		t.Skip("GOGC or GOMEMLIMIT is set")
	}
	defer resetGC()
	for _, tc := range []struct {
		name  string
		plan  int64
		steps int
		want  int // GOGC at once; startGCPercent: left at the start-up pace
	}{
		{"few steps, short file", 100, 100, startGCPercent},
		{"a fan-out of 1,000 items", 100, 1000, 100},
		{"a fan-out of 10,000 items", 100, 10000, 25},
		{"the steps listed", bigPlan, 8192, 25},
		{"a big file of few steps", bigPlan, 10, 25},
		{"a longer file of few steps", shortPlan, 10, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tuneStartGC()
			tuneGC(tc.plan)
			tuneGCSteps(tc.steps)
			if got := gogc(); got != tc.want {
				t.Fatalf("plan of %d bytes, %d steps: GOGC %d, want %d", tc.plan, tc.steps, got, tc.want)
			}
		})
	}
}

// TestLoadPlanFanOutPace: `faber run` of a plan whose one foreach: makes
// 10,000 steps runs at the pace of a big plan once it is loaded (it ran
// at the start-up pace, 400, and peaked at 190 MB where the same steps
// listed peaked at 75).
func TestLoadPlanFanOutPace(t *testing.T) {
	if userGC() {
		t.Skip("GOGC or GOMEMLIMIT is set")
	}
	defer resetGC()
	file := filepath.Join(t.TempDir(), "fan.yaml")
	text := "name: fan\nsteps:\n  - id: t\n    foreach: {range: [1, 10000]}\n    run: \"true\"\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tuneStartGC()
	g := &Globals{stdout: io.Discard, stderr: io.Discard}
	plan, _, _, err := loadPlan(g, file, setSources{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) != 10001 {
		t.Fatalf("%d steps, want 10,001 (the items and the join)", len(plan.Steps))
	}
	if got := gogc(); got != 25 {
		t.Fatalf("GOGC %d after loading a foreach: of 10,000 items, want 25 (a big plan's)", got)
	}
}

// keepTiny holds small pointer-free objects allocated next to the
// sentinel, as faber's own live data may be.
var keepTiny []*int64

// TestStartGCTinyNeighbour: the way back from the start-up pace happens
// even when what was allocated right after the sentinel stays live. The
// tiny allocator packs small pointer-free objects into one 16-byte block
// whose finalizers run only when all of them are garbage: with such a
// sentinel, a short plan kept GOGC=400 to the end of its run.
func TestStartGCTinyNeighbour(t *testing.T) {
	if userGC() {
		t.Skip("GOGC or GOMEMLIMIT is set")
	}
	defer resetGC()
	defer func() { keepTiny = nil }()
	runtime.GC() // finalizers of earlier tests' sentinels run now, not below
	time.Sleep(10 * time.Millisecond)
	tuneStartGC()
	for range 64 {
		keepTiny = append(keepTiny, new(int64))
	}
	tuneGC(1 << 10) // a short plan
	deadline := time.Now().Add(10 * time.Second)
	for gogc() != 100 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d after collections, want 100: the sentinel's finalizer did not run", got)
	}
}

// TestFloorPercent: the pace that lets a heap of live bytes grow to the
// floor, +25% once that is more, never above the start-up pace.
func TestFloorPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		floor, live int64
		want        int
	}{
		{50 * mb, 0, 25},        // no collection yet: the big plan's pace
		{50 * mb, 40 * mb, 25},  // +25% goes past the floor
		{50 * mb, 20 * mb, 150}, // 20 MB may grow to 50
		{50 * mb, 1 * mb, 400},  // no faster than the start-up pace
		{50 * mb, 50 * mb, 25},  // at the floor
		{heapFloor(10000), 28 * mb, int((heapFloor(10000) - 28*mb) * 100 / (28 * mb))},
	} {
		if got := floorPercent(tc.floor, tc.live); got != tc.want {
			t.Errorf("floorPercent(%d, %d) = %d, want %d", tc.floor, tc.live, got, tc.want)
		}
	}
	if f := heapFloor(10000); f < 45*mb || f > 55*mb {
		t.Errorf("heapFloor(10,000) = %d MB, want about 50", f/mb)
	}
}

// TestGCFloorOnHit: a big plan's run collects at +25% until its first
// cache hit, then at the floor's pace, set again after each collection;
// a plan that is not big, GOGC in the environment, and the next run
// (tuneStartGC) are left without a floor.
func TestGCFloorOnHit(t *testing.T) {
	if userGC() {
		t.Skip("GOGC or GOMEMLIMIT is set")
	}
	defer resetGC()
	// collect runs collections until GOGC is want (finalizers run on
	// their own goroutine after one), or fails.
	collect := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
			got := gogc()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: GOGC %d after collections, want %d", what, got, want)
			}
		}
	}
	// The live heap the pace is set from is this test's: the package's
	// other tests move the real one between two collections.
	var live atomic.Int64
	live.Store(1 << 20)
	setLive := func(f func() int64) (old func() int64) {
		gcTune.Lock() // the floor's finalizer reads it under the lock
		defer gcTune.Unlock()
		old, liveHeap = liveHeap, f
		return old
	}
	defer setLive(setLive(live.Load))
	tuneStartGC()
	tuneGC(100)
	tuneGCSteps(10000)
	if got := gogc(); got != 25 {
		t.Fatalf("a foreach: of 10,000 items before any hit: GOGC %d, want 25", got)
	}
	tuneGCHit()
	if got := gogc(); got != startGCPercent {
		t.Fatalf("after the first hit, 1 MB live: GOGC %d, want %d (the floor's pace at once, no faster than the start-up pace)", got, startGCPercent)
	}
	// Each collection sets the pace again from what is live: with 20 MB
	// live, the heap may grow to the floor (about 50 MB), not by 400%;
	// with 45 MB, by +25%.
	live.Store(20 << 20)
	want := floorPercent(heapFloor(10000), 20<<20)
	if want < 100 || want > 200 {
		t.Fatalf("the floor's pace at 20 MB live is %d, want 100 to 200", want)
	}
	collect(want, "with 20 MB live")
	live.Store(45 << 20)
	collect(25, "with 45 MB live")
	live.Store(1 << 20)
	collect(startGCPercent, "with 1 MB live again")

	// A plan that is not big keeps Go's pace, hit or not.
	tuneStartGC()
	tuneGC(100)
	tuneGCSteps(1000)
	tuneGCHit()
	collect(100, "a fan-out of 1,000 items with a hit")

	// The next run starts without the floor: its big plan runs at +25%
	// until a hit of its own, and the armed sentinel lets go.
	tuneStartGC()
	tuneGC(100)
	tuneGCSteps(10000)
	collect(25, "a new run of a big plan without a hit")
	gcTune.Lock()
	floor := gcTune.floor
	gcTune.Unlock()
	if floor != 0 {
		t.Fatalf("a new run without a hit holds a floor of %d bytes", floor)
	}

	// GOGC in the environment wins.
	t.Setenv("GOGC", "100")
	debug.SetGCPercent(100)
	tuneGCHit()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC=100 in the environment: GOGC %d after a hit, want 100", got)
	}
}
