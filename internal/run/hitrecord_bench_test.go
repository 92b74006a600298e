package run

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
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
	planFile := filepath.Join(b.TempDir(), "plan.yaml")
	if err := os.WriteFile(planFile, []byte(planText), 0o600); err != nil {
		b.Fatal(err)
	}
	store, err := state.Create(stateDir, state.Meta{RunID: runID, Plan: "p", PlanFile: planFile}, []byte(planText), state.Options{Steps: 10000})
	if err != nil {
		b.Fatal(err)
	}
	rec, seq, now := Recorder{Store: store}, int64(0), time.Now()
	for c := range 100 {
		var steps []*exec.StepState
		var evs []exec.Event
		for i := range 100 {
			id := fmt.Sprintf("t[%d]", c*100+i+1)
			key := fmt.Sprintf("%064x", c*100+i)
			st := &exec.StepState{ID: id, Name: id, Phase: "main", Status: exec.StatusCached, StartedAt: &now, FinishedAt: &now,
				Needs: []string{}, FanOut: "t", Hash: key, CacheKey: key,
				CachedFrom: &exec.CachedFrom{Attempt: 1, RunID: "p-20251231T000000-0001", Seq: int64(c*100 + i + 2)}}
			ms := int64(0)
			steps = append(steps, st)
			evs = append(evs,
				exec.Event{Type: exec.EvStepCacheHit, StepID: id, Data: &exec.CacheHit{CachedAttempt: 1, CachedRunID: st.CachedFrom.RunID, CachedSeq: st.CachedFrom.Seq, Key: key}},
				exec.Event{Type: exec.EvStepStatus, StepID: id, Status: exec.StatusCached, Data: &exec.StepStatus{Phase: "main", CacheKey: key,
					StartedAt: new(now.UTC()), FinishedAt: new(now.UTC()), DurationMs: &ms}})
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
