package run_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/internal/runtest"
	"github.com/faber-run/faber/state"
)

func TestListFilter(t *testing.T) {
	// newest first, as state.List gives them: p2 has a child c2 (which has
	// its own child g2), p1 has a child c1; c1's parent p1 and o are older.
	items := []run.ListItem{
		{RunID: "g2", Plan: "grand", Status: "success", ParentRunID: "c2"},
		{RunID: "c2", Plan: "child", Status: "failed", ParentRunID: "p2"},
		{RunID: "p2", Plan: "parent", Status: "failed"},
		{RunID: "x", Plan: "other", Status: "pending_failed"},
		{RunID: "c1", Plan: "child", Status: "success", ParentRunID: "p1"},
		{RunID: "p1", Plan: "parent", Status: "success"},
		{RunID: "o", Plan: "orphan", Status: "success", ParentRunID: "gone"},
	}
	ids := func(its []run.ListItem) []string {
		out := []string{}
		for _, it := range its {
			out = append(out, it.RunID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    run.ListFilter
		want []string
	}{
		{"none", run.ListFilter{}, []string{"g2", "c2", "p2", "x", "c1", "p1", "o"}},
		{"status", run.ListFilter{Statuses: map[string]bool{"success": true}}, []string{"g2", "c1", "p1", "o"}},
		{"statuses", run.ListFilter{Statuses: map[string]bool{"failed": true, "pending_failed": true}}, []string{"c2", "p2", "x"}},
		{"plan", run.ListFilter{Plan: "child"}, []string{"c2", "c1"}},
		{"no match", run.ListFilter{Plan: "nope"}, []string{}},
		// --limit counts trees: a parent brings its children along
		{"limit 1", run.ListFilter{Limit: 1}, []string{"g2", "c2", "p2"}},
		{"limit 2", run.ListFilter{Limit: 2}, []string{"g2", "c2", "p2", "x"}},
		{"limit 3", run.ListFilter{Limit: 3}, []string{"g2", "c2", "p2", "x", "c1", "p1"}},
		{"limit 9", run.ListFilter{Limit: 9}, []string{"g2", "c2", "p2", "x", "c1", "p1", "o"}},
		// a child whose parent is filtered out stands on its own and counts
		{"plan + limit", run.ListFilter{Plan: "child", Limit: 1}, []string{"c2"}},
		{"status + limit", run.ListFilter{Statuses: map[string]bool{"success": true}, Limit: 2}, []string{"g2", "c1", "p1"}},
	} {
		got := ids(tc.f.Apply(slices.Clone(items)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	// a parent cycle (hand-edited metadata) neither hangs nor shows up
	cyc := []run.ListItem{{RunID: "a", ParentRunID: "b"}, {RunID: "b", ParentRunID: "a"}, {RunID: "c"}}
	if got := ids(run.ListFilter{Limit: 5}.Apply(cyc)); !slices.Equal(got, []string{"c"}) {
		t.Errorf("cycle: got %v", got)
	}
}

// list --limit N reads only the newest runs, yet shows what filtering the
// whole listing would: with child runs (listed under their parents, not
// counted), filters by status and plan, and runs whose start is far from
// their meta.json's time.
func TestListLimitReadsWhatAllWould(t *testing.T) {
	dir := t.TempDir()
	first := time.Now().Add(-40 * time.Hour)
	runtest.MakeRuns(t, dir, 40, first)
	all, err := state.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Every third run failed; runs 10..14 are children of run 9, run 30 of
	// run 2 (an old parent), and run 20 a grandchild of run 9.
	byStart := map[int]string{}
	for _, r := range all {
		i := int(r.StartedAt.Sub(first).Round(time.Minute) / time.Minute)
		byStart[i] = r.RunID
	}
	edit := func(i int, f func(s *state.Summary)) {
		path := filepath.Join(state.RunDir(dir, byStart[i]), "summary.json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var s state.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		f(&s)
		if b, err = json.Marshal(s); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i += 3 {
		edit(i, func(s *state.Summary) { s.Status = "failed" })
	}
	for i := 10; i < 15; i++ {
		edit(i, func(s *state.Summary) { s.ParentRunID = byStart[9]; s.Plan = "child" })
	}
	edit(30, func(s *state.Summary) { s.ParentRunID = byStart[2]; s.Plan = "child" })
	edit(20, func(s *state.Summary) { s.ParentRunID = byStart[12]; s.Plan = "child" })
	if len(byStart) != 40 {
		t.Fatalf("%d runs", len(byStart))
	}
	if n := run.NewestRunsRead(dir, run.ListFilter{Limit: 1}); n >= 10 {
		t.Fatalf("--limit 1 read %d runs of 40", n)
	}
	for _, c := range []struct {
		Limit  int
		Status []string
		Plan   string
	}{
		{Limit: 1}, {Limit: 3}, {Limit: 10}, {Limit: 25}, {Limit: 100},
		{Limit: 2, Status: []string{"failed"}}, {Limit: 4, Plan: "child"}, {Limit: 5, Plan: "bench"},
		{Limit: 1, Status: []string{"interrupted"}},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			f, err := run.NewListFilter(c.Status, c.Plan, c.Limit)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.List(dir, f)
			if err != nil {
				t.Fatal(err)
			}
			f0 := f
			f0.Limit = 0
			every, err := run.List(dir, f0)
			if err != nil {
				t.Fatal(err)
			}
			if want := f.Apply(every); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %d runs:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
			}
		})
	}
}
