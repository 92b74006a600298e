// Package runtest makes state dirs for tests and benchmarks: many finished
// runs, each with the summary its owner leaves.
package runtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// MakeRuns makes n finished runs in stateDir, started a minute apart from
// first on, as if made over time: each meta.json's modification time is just
// after its start.
func MakeRuns(tb testing.TB, stateDir string, n int, first time.Time) {
	tb.Helper()
	// One real run, with the summary its owner leaves.
	src := "bench-20000101T000000-0000"
	srcDir := filepath.Join(tb.TempDir(), "src")
	store, err := state.Create(srcDir, state.Meta{RunID: src, Plan: "bench", PlanFile: "/bench.yaml"}, []byte("name: bench\n"), state.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	evs := []exec.Event{
		{Type: exec.EvRunStarted, Data: &exec.RunStarted{Plan: "bench"}},
		{Type: exec.EvStepStatus, StepID: "a", Attempt: 1, Status: exec.StatusSuccess},
		{Type: exec.EvWorkflowCompleted, Status: exec.RunSuccess},
	}
	exec.Stamp(evs, 0, src, now)
	if err := (run.Recorder{Store: store}).Commit(&exec.RunState{RunID: src, Plan: "bench", Status: exec.RunSuccess, StartedAt: now}, nil, evs); err != nil {
		tb.Fatal(err)
	}
	if err := store.Close(); err != nil {
		tb.Fatal(err)
	}
	sum, ok := state.ReadSummary(srcDir, src)
	if !ok {
		tb.Fatal("the run has no summary")
	}
	from := state.RunDir(srcDir, src)
	dbFiles, err := os.ReadDir(filepath.Join(from, "db"))
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		started := first.Add(time.Duration(i) * time.Minute)
		id := fmt.Sprintf("bench-%s-%04x", started.UTC().Format("20060102T150405"), i&0xffff)
		to := state.RunDir(stateDir, id)
		check := func(err error) {
			if err != nil {
				tb.Fatal(err)
			}
		}
		check(os.MkdirAll(filepath.Join(to, "db"), 0o700))
		for _, f := range dbFiles {
			check(os.Link(filepath.Join(from, "db", f.Name()), filepath.Join(to, "db", f.Name())))
		}
		check(os.Link(filepath.Join(from, "events.jsonl"), filepath.Join(to, "events.jsonl")))
		meta := state.Meta{RunID: id, Plan: "bench", PlanFile: "/bench.yaml", StartedAt: started, Created: started.UnixNano()}
		mb, err := json.MarshalIndent(meta, "", "  ")
		check(err)
		check(os.WriteFile(filepath.Join(to, "meta.json"), mb, 0o600))
		at := started.Add(5 * time.Millisecond)
		check(os.Chtimes(filepath.Join(to, "meta.json"), at, at))
		s := sum
		s.RunID, s.StartedAt, s.Created = id, started, meta.Created
		fin := started.Add(time.Second)
		s.FinishedAt = &fin
		s.Files = stamps(tb, to)
		sb, err := json.Marshal(s)
		check(err)
		check(os.WriteFile(filepath.Join(to, "summary.json"), sb, 0o600))
		if i == 0 {
			if _, ok := state.ReadSummary(stateDir, id); !ok {
				tb.Fatal("a copied run's summary is not current: the benchmark would measure runs without one")
			}
		}
	}
}

// stamps takes the stamps of a run's files as the summary holds them.
func stamps(tb testing.TB, dir string) []state.FileStamp {
	var out []state.FileStamp
	add := func(name string) {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, state.FileStamp{Name: filepath.ToSlash(name), Size: fi.Size(), MTime: fi.ModTime().UnixNano()})
	}
	add("meta.json")
	ents, err := os.ReadDir(filepath.Join(dir, "db"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		add(filepath.Join("db", e.Name()))
	}
	slices.SortFunc(out, func(a, b state.FileStamp) int { return strings.Compare(a.Name, b.Name) })
	return out
}
