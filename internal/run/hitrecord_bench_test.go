package run

import (
	"fmt"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
)

// BenchmarkLoadHits: what a resume's load of a 10,000-item cached fan-out
// costs, its records all hit records (README "Cache hits in the store"),
// and the same run's with full records (each committed apart from its
// events, so that the Recorder cannot shorten it).
func BenchmarkLoadHits(b *testing.B) {
	b.Run("hit-records", func(b *testing.B) { benchLoadHits(b, true) })
	b.Run("full-records", func(b *testing.B) { benchLoadHits(b, false) })
}

func benchLoadHits(b *testing.B, short bool) {
	stateDir, runID := b.TempDir(), "p-20260101T000000-beef"
	store := newStore(b, stateDir, runID, 10000)
	rec, seq, now := Recorder{Store: store}, int64(0), time.Now()
	for c := range 100 {
		var steps []*exec.StepState
		var evs []exec.Event
		for i := range 100 {
			n := c*100 + i
			st, e := hitFixture(fmt.Sprintf("t[%d]", n+1), "t", fmt.Sprintf("%064x", n), int64(n+2), now)
			steps, evs = append(steps, st), append(evs, e...)
		}
		seq = exec.Stamp(evs, seq, runID, now)
		if !short {
			if err := rec.Commit(nil, steps, nil); err != nil {
				b.Fatal(err)
			}
			steps = nil
		}
		if err := rec.Commit(nil, steps, evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		_, prior, err := LoadRecords(store, runID, stateDir)
		if err != nil || len(prior.Steps) != 10000 {
			b.Fatal(len(prior.Steps), err)
		}
	}
	b.StopTimer()
	store.Close()
}
