package exec

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestRunnerGrown: when a fan-out over glob: reads its items, the runner
// tells Grown the plan's new number of steps (faber sets the collector's
// pace from it: the plan file says nothing of how many steps it makes).
func TestRunnerGrown(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the plan uses touch")
	}
	store := &fakeStore{}
	plan := `name: t
steps:
  - {id: mk, run: "touch a.txt b.txt c.txt"}
  - {id: each, foreach: {glob: "*.txt"}, needs: [mk], run: "true"}
`
	var grown []int
	dir := t.TempDir()
	p := writePlan(t, dir, plan)
	r := &Runner{Plan: p, RunID: "t-20260101T000000-abcd", RunDir: filepath.Join(dir, "run"), Store: store, Jobs: 1,
		Grown: func(n int) { grown = append(grown, n) }}
	if status, err := r.Run(t.Context(), nil); err != nil || status != RunSuccess {
		t.Fatalf("status %s, err %v; want success", status, err)
	}
	// mk, the three items and the join.
	if !slices.Equal(grown, []int{5}) {
		t.Fatalf("Grown told %v, want [5]", grown)
	}
}
